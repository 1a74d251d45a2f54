# Shared by scripts/demo and scripts/test: makes sure the Debian packages the build needs
# are installed (installs them when run as root; otherwise prints the one command to run).
# Sourced, not executed.

LEASEGUARD_PACKAGES=(cmake ninja-build g++ binutils googletest libgtest-dev libdw-dev libelf-dev libbenchmark-dev libamdhip64-dev clang clang-format clang-tidy libclang-rt-14-dev chromium python3 python3-jsonschema python3-yaml libxml2-utils pkgconf liblz4-dev libzstd-dev prometheus tmux systemd slurmctld slurmd slurm-client munge)

leaseguard_missing_packages() {
  local missing=()
  for package in "${LEASEGUARD_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
  done
  echo "${missing[@]}"
}

leaseguard_ensure_packages() {
  local missing
  missing=$(leaseguard_missing_packages)
  [ -z "$missing" ] && return 0
  if [ "$(id -u)" -eq 0 ]; then
    echo "leaseguard: installing: $missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq $missing >/dev/null || {
      echo "leaseguard: apt-get install failed" >&2
      return 1
    }
  else
    echo "leaseguard: missing packages. Run:" >&2
    echo "  sudo apt-get install -y $missing" >&2
    return 1
  fi
}

# leaseguard_build PRESET: configure (once) and build.
# leaseguard_build_targets PRESET TARGET...: configures PRESET if needed and builds only
# TARGETs, showing the build's progress (ninja's [done/total] lines).
leaseguard_build_targets() {
  local preset=$1
  shift
  local root
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  cd "$root" || return 1
  if [ ! -f "build/$preset/build.ninja" ]; then
    echo "leaseguard: configuring (cmake --preset $preset)"
    cmake --preset "$preset" >/dev/null || return 1
  fi
  echo "leaseguard: building $* (the first time takes a few minutes)"
  cmake --build --preset "$preset" --target "$@" || return 1
}

leaseguard_build() {
  local preset=$1
  local root
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  cd "$root" || return 1
  if [ ! -f "build/$preset/build.ninja" ]; then
    cmake --preset "$preset" >/dev/null || return 1
  fi
  cmake --build --preset "$preset" || return 1
}
