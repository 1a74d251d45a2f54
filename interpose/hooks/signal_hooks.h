// SIGTERM and SIGINT handling that ends leases first (see signal_hooks.cpp).
#pragma once

namespace leaseguard::interpose {

// Installs leaseguard's handler for SIGTERM and SIGINT, keeping the dispositions inherited
// from the parent as the program's (an ignored signal stays ignored).
void install_termination_handlers() noexcept;

}  // namespace leaseguard::interpose
