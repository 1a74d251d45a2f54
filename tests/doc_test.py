#!/usr/bin/env python3
"""Every fenced block in README.md and docs/*.md, checked as what it claims to be.

    doc_test.py BUILD_DIR SOURCE_ROOT LEAKY_EXAMPLE

Each block carries a marker on the line before its fence, `<!-- doctest: KIND ... -->`; a
block without one fails the test, so a new recipe cannot go unchecked. The kinds:

  sh                  each command runs in the sandbox, as written; it must exit 0, or 0 or
                      23 where it asks to fail on a leak (`--fail-on-leak`, `diff`)
  output of COMMAND   the block is COMMAND's output: its lines, in order, with addresses,
                      pids and directories left open
  file PATH           the block is written to PATH in the sandbox, for the recipes to use
  excerpt of PATH     the block's lines appear, in order, in the repository's PATH (spacing
                      aside): code quoted from the source stays what the source says
  compile LANG [declaring DECLARATIONS]
                      a C or C++ fragment compiles against the installed headers, inside a
                      function, after DECLARATIONS for the names it leaves to the reader
  github-actions      a workflow job: its `run` steps run in the sandbox (bash -e, as GitHub
                      runs them), `if: always()` steps run after a failure, and what the
                      upload steps upload exists (the SARIF valid against its schema)
  gitlab-ci           a job: its `script` runs (bash -e), its JUnit report exists and is
                      valid against the JUnit schema, its artifact paths exist
  prometheus-rules    alerting rules: `promtool check rules` finds them valid
  prometheus-config   a Prometheus configuration: `promtool check config` finds it valid
  skip: REASON        not run, for the reason given (printed)

The sandbox is the project a reader would have: the installed build on the PATH, the docs'
own files (`file` blocks), the CMake project of docs/ci.md with a GoogleTest test that leaks
(the page leaves its source to the reader), and the programs the recipes name as
placeholders, each a copy of the leaky example pipeline. Placeholders for the install
location are the one substitution (PLACEHOLDERS below)."""
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

import yaml

BUILD, ROOT, EXAMPLE = sys.argv[1], sys.argv[2], sys.argv[3]
DOCS = ["README.md"] + sorted("docs/" + name for name in os.listdir(os.path.join(ROOT, "docs")) if name.endswith(".md"))
MARKER = re.compile(r"<!--\s*doctest:\s*(.*?)\s*-->")
FAILURES = []


def fail(where, message):
    FAILURES.append(f"{where}: {message}")
    print(f"FAILED {where}: {message}", flush=True)


def blocks():
    """(where, marker or None, language, text) for every fenced block of every page."""
    for page in DOCS:
        lines = open(os.path.join(ROOT, page), encoding="utf-8").read().split("\n")
        at = 0
        while at < len(lines):
            fence = re.match(r"^(```+)(\S*)\s*$", lines[at])
            if not fence:
                at += 1
                continue
            end = next((i for i in range(at + 1, len(lines)) if lines[i].startswith(fence.group(1))), len(lines))
            before = next((lines[i] for i in range(at - 1, -1, -1) if lines[i].strip()), "")
            marker = MARKER.search(before)
            yield f"{page}:{at + 1}", marker.group(1) if marker else None, fence.group(2), "\n".join(lines[at + 1:end]) + "\n"
            at = end + 1


# ---- the sandbox ------------------------------------------------------------------------------
work = tempfile.mkdtemp(prefix="leaseguard-doctest-")
prefix, sandbox = os.path.join(work, "prefix"), os.path.join(work, "project")
os.makedirs(sandbox)
subprocess.run(["cmake", "--install", BUILD, "--prefix", prefix], check=True, stdout=subprocess.DEVNULL)
PLACEHOLDERS = {"/path/to/lib": prefix + "/lib", "/tmp/lg": sandbox + "/tmp-lg"}
ENV = dict(os.environ, PATH=prefix + "/bin:" + os.environ["PATH"], PKG_CONFIG_PATH=prefix + "/lib/pkgconfig",
           CMAKE_PREFIX_PATH=prefix)
ENV.pop("LEASEGUARD_OUT", None)


def substitute(text):
    for placeholder, value in PLACEHOLDERS.items():
        text = text.replace(placeholder, value)
    return text


def shell(command, where, allowed=(0,), quiet=False, cwd=None):
    run = subprocess.run(["bash", "-c", command], cwd=cwd or sandbox, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, timeout=600)
    if run.returncode not in allowed:
        fail(where, f"`{command.strip()}` exited {run.returncode}, not {' or '.join(map(str, allowed))}:\n{run.stdout[-3000:]}")
    elif not quiet:
        print(f"ok     {where}: `{command.strip()[:100]}` exited {run.returncode}", flush=True)
    return run


# The programs the recipes name, each the leaky example (4 leaks, 14336 bytes).
for name in ["my_cuda_program", "service", "app", "tests", "leaky_pipeline"]:
    shutil.copy(EXAMPLE, os.path.join(sandbox, name))
# `ctest` in the project's root runs the example: the README's CI line has tests to run.
with open(os.path.join(sandbox, "CTestTestfile.cmake"), "w") as out:
    out.write("add_test(pipeline ./my_cuda_program)\n")
# docs/ci.md's project leaves its test's source to the reader: one that leaks on an error path.
with open(os.path.join(sandbox, "kernels_test.cpp"), "w") as out:
    out.write("""#include <dlfcn.h>
#include <gtest/gtest.h>
template <typename F>
F driver(const char *name) {
  static void *library = dlopen("libcuda.so.1", RTLD_NOW);
  return library == nullptr ? nullptr : reinterpret_cast<F>(dlsym(library, name));
}
TEST(Kernels, ScratchBufferIsFreed) {
  void *context = nullptr;
  unsigned long long scratch = 0;
  ASSERT_EQ(driver<int (*)(unsigned)>("cuInit")(0), 0);
  ASSERT_EQ(driver<int (*)(void **, int)>("cuDevicePrimaryCtxRetain")(&context, 0), 0);
  ASSERT_EQ(driver<int (*)(void *)>("cuCtxSetCurrent")(context), 0);
  ASSERT_EQ(driver<int (*)(unsigned long long *, size_t)>("cuMemAlloc_v2")(&scratch, 4096), 0);
  scratch = 0;  // the error path forgets to free it
}
""")
# docs/ci.md's pkg-config lines build a program of the lease C ABI and one of the C++ API.
with open(os.path.join(sandbox, "prog.c"), "w") as out:
    out.write('#include <leaseguard/leaseguard.h>\n'
              'int main(void) { return leaseguard_lease_end(leaseguard_lease_begin("p", 0, LEASEGUARD_REPORT)) < 0; }\n')
with open(os.path.join(sandbox, "app.cpp"), "w") as out:
    out.write('#include <leaseguard/session.hpp>\n'
              'int main() { leaseguard::GpuSession session({.name = "app"}); return static_cast<int>(session.end()); }\n')
# The CI jobs' project: any CMake project whose tests allocate on the GPU; here one test,
# the leaky example, with the suppressions file the jobs name.
ci_project = os.path.join(sandbox, "ci-project")
os.makedirs(ci_project)
with open(os.path.join(ci_project, "CMakeLists.txt"), "w") as out:
    out.write("cmake_minimum_required(VERSION 3.25)\nproject(gpu_app NONE)\nenable_testing()\n"
              "add_test(NAME pipeline COMMAND ${CMAKE_SOURCE_DIR}/../my_cuda_program)\n")
# Runs to compare with: the recipes that diff or baseline name them.
for directory in ["main-run", "branch-run"]:
    shell(f"leaseguard run --sim --quiet --out {directory} -- ./my_cuda_program", "fixture", quiet=True)
shell("leaseguard run --sim --quiet --out main-out --format json=main-leaseguard.json -- ./my_cuda_program", "fixture", quiet=True)


# ---- the kinds --------------------------------------------------------------------------------
def commands(text):
    """Logical lines: continuations joined, comments and blank lines dropped."""
    joined, pending = [], ""
    for line in text.split("\n"):
        pending += line[:-1] + " " if line.endswith("\\") else line
        if line.endswith("\\"):
            continue
        words = shlex.split(pending, comments=True) if pending.strip() else []
        if words:
            joined.append(pending.split(" #")[0] if " #" in pending else pending)
        pending = ""
    return joined


def allowed_statuses(command):
    return (0, 23) if "--fail-on-leak" in command or re.search(r"\bleaseguard diff\b", command) else (0,)


def run_sh(where, text):
    for command in commands(substitute(text)):
        shell(command, where, allowed_statuses(command))


def pattern_of(line):
    """A documented output line as a pattern: addresses, pids, times and directories open."""
    out, at = "", 0
    for token in re.finditer(r"0x[0-9a-f]+|==\d+==|\b\d+(\.\d+)? ms\b|(?:[\w.-]*/)+|pid \d+|process \d+", line):
        out += re.escape(line[at:token.start()])
        text = token.group(0)
        if text.startswith("0x"):
            out += "0x[0-9a-f]+"
        elif text.startswith("=="):
            out += r"==\d+=="
        elif text.endswith(" ms"):
            out += r"[\d.]+ ms"
        elif text.endswith("/"):
            out += r"\S*?/?"
        else:
            out += re.escape(text.split(" ")[0]) + r" \d+"
        at = token.end()
    return re.compile(out + re.escape(line[at:]) + r"\s*$")


def run_output(where, command, text):
    run = shell(substitute(command), where, allowed_statuses(command), quiet=True)
    actual = [line for line in run.stdout.split("\n") if line.strip()]
    at = 0
    for line in (line for line in text.split("\n") if line.strip()):
        pattern = pattern_of(line)
        while at < len(actual) and not pattern.match(actual[at]):
            at += 1
        if at == len(actual):
            fail(where, f"`{command}` printed no line like\n  {line}\nin order; it printed:\n  " + "\n  ".join(actual))
            return
        at += 1
    print(f"ok     {where}: the output of `{command}`", flush=True)


def run_excerpt(where, path, text):
    def normal(line):
        return " ".join(line.strip().rstrip("\\").split())
    source = [normal(line) for line in open(os.path.join(ROOT, path), encoding="utf-8")]
    at = 0
    for line in (normal(line) for line in text.split("\n") if line.strip()):
        while at < len(source) and source[at] != line:
            at += 1
        if at == len(source):
            fail(where, f"not in {path} (in this order): {line}")
            return
        at += 1
    print(f"ok     {where}: an excerpt of {path}", flush=True)


def run_compile(where, language, declarations, text):
    suffix, compiler = (".c", ["cc", "-std=c11"]) if language == "c" else (".cpp", ["c++", "-std=c++20"])
    includes = "\n".join(line for line in text.split("\n") if line.startswith("#include"))
    body = "\n".join(line for line in text.split("\n") if not line.startswith("#include"))
    source = os.path.join(work, "fragment" + suffix)
    with open(source, "w") as out:
        extra = "#include <span>\n#include <vector>\n#include <chrono>\n" if language != "c" else ""
        out.write(f"{includes}\n{extra}{declarations}\nvoid fragment(void) {{\n{body}\n}}\n")
    run = subprocess.run(compiler + ["-fsyntax-only", "-Wall", "-I" + prefix + "/include", source], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    if run.returncode != 0:
        fail(where, f"does not compile:\n{run.stdout}")
    else:
        print(f"ok     {where}: compiles as {language}", flush=True)


def check_sarif(where, path):
    schemas = os.path.join(ROOT, "tests/data/schemas")
    run = subprocess.run([sys.executable, os.path.join(schemas, "validate.py"), os.path.join(schemas, "sarif-2.1.0.json"),
                          os.path.join(ci_project, path)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if run.returncode != 0:
        fail(where, f"{path} is not valid SARIF 2.1.0:\n{run.stdout}")


def check_junit(where, path):
    run = subprocess.run(["xmllint", "--noout", "--schema", os.path.join(ROOT, "tests/data/schemas/jenkins-junit-4.xsd"),
                          os.path.join(ci_project, path)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    # The XSD predates the `file` attribute GitLab reads; everything else must be valid.
    problems = [line for line in run.stdout.split("\n") if "fails to validate" not in line and line.strip()
                and "attribute 'file' is not allowed" not in line]
    if run.returncode not in (0, 3) or any("error" in line for line in problems):
        fail(where, f"{path} is not valid JUnit:\n{run.stdout}")


def check_exists(where, path):
    if not os.path.exists(os.path.join(ci_project, path.rstrip("/"))):
        fail(where, f"the job uploads {path}, which it did not make")


def run_github(where, text):
    for name, job in yaml.safe_load(text)["jobs"].items():
        failed = False
        for step in job["steps"]:
            if failed and "always()" not in str(step.get("if", "")):
                continue
            if "run" in step:
                run = shell("set -e\n" + step["run"], f"{where} job {name}, step {step.get('name')}", allowed_statuses(step["run"]),
                            cwd=ci_project)
                failed = failed or run.returncode != 0
            elif step["uses"].startswith("github/codeql-action/upload-sarif"):
                check_exists(where, step["with"]["sarif_file"])
                check_sarif(where, step["with"]["sarif_file"])
            elif step["uses"].startswith("actions/upload-artifact"):
                for path in step["with"]["path"].split():
                    check_exists(where, path)
        print(f"ok     {where}: GitHub Actions job {name}", flush=True)


def run_gitlab(where, text):
    for name, job in yaml.safe_load(text).items():
        script = "set -e\n" + "\n".join(job["script"])
        shell(script, f"{where} job {name}", allowed_statuses(script), cwd=ci_project)
        artifacts = job.get("artifacts", {})
        junit = artifacts.get("reports", {}).get("junit")
        if junit:
            check_exists(where, junit)
            check_junit(where, junit)
        for path in artifacts.get("paths", []):
            check_exists(where, path)
        print(f"ok     {where}: GitLab CI job {name}", flush=True)


def run_promtool(where, check, text):
    path = os.path.join(work, "promtool-" + check + ".yml")
    with open(path, "w") as out:
        out.write(text)
    shell(f"promtool check {check} {shlex.quote(path)}", where)


# ---- run: files first (recipes use them wherever they appear), then the rest in page order ----
found = list(blocks())
for where, marker, language, text in found:
    if marker and marker.startswith("file "):
        path = os.path.join(sandbox, marker[5:].strip())
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as out:
            out.write(text)
        if marker[5:].strip() == "leaks.supp":  # the CI jobs' project names it too
            shutil.copy(path, os.path.join(ci_project, "leaks.supp"))
        print(f"ok     {where}: written to {marker[5:].strip()}", flush=True)
for where, marker, language, text in found:
    if marker is None:
        fail(where, f"a ```{language} block without a <!-- doctest: ... --> marker (tests/doc_test.py says which)")
    elif marker.startswith("file "):
        continue
    elif marker.startswith("skip:"):
        print(f"skip   {where}: {marker[5:].strip()}", flush=True)
    elif marker == "sh":
        run_sh(where, text)
    elif marker.startswith("output of "):
        run_output(where, marker[len("output of "):], text)
    elif marker.startswith("excerpt of "):
        run_excerpt(where, marker[len("excerpt of "):].strip(), text)
    elif marker.startswith("compile "):
        language, _, declarations = marker[len("compile "):].partition(" declaring ")
        run_compile(where, language.strip(), declarations, text)
    elif marker == "github-actions":
        run_github(where, text)
    elif marker == "gitlab-ci":
        run_gitlab(where, text)
    elif marker == "prometheus-rules":
        run_promtool(where, "rules", text)
    elif marker == "prometheus-config":
        run_promtool(where, "config", text)
    else:
        fail(where, f"unknown doctest marker: {marker}")

shutil.rmtree(work, ignore_errors=True)
print(f"{len(found)} block(s), {len(FAILURES)} failure(s)")
sys.exit(1 if FAILURES else 0)
