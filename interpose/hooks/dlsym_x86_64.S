/* leaseguard's exported dlsym: a trampoline that keeps the caller's identity.
 *
 * glibc resolves dlsym(RTLD_NEXT, ...) and dlsym(RTLD_DEFAULT, ...) relative to the object
 * that called it, found from the return address. A C wrapper that called the real dlsym
 * would make every library's RTLD_NEXT lookup start after leaseguard instead of after that
 * library: interposers that wrap malloc or dlopen would then find themselves and recurse.
 * So for those two pseudo-handles this trampoline tail-jumps into the real dlsym with the
 * caller's return address still on the stack; only lookups on a specific handle (how the
 * CUDA runtime and others reach the driver) go to C, with the caller's return address as a
 * third argument: there it matters only to tell a library leaseguard forwards to from one
 * that calls leaseguard (dlsym_hook.cpp). The trampoline itself takes no lock and allocates
 * nothing. */

    .text
    .globl  dlsym
    .type   dlsym, @function
dlsym:
    .cfi_startproc
    testq   %rdi, %rdi                  /* RTLD_DEFAULT */
    je      .Lcaller_relative
    cmpq    $-1, %rdi                   /* RTLD_NEXT */
    je      .Lcaller_relative
    movq    (%rsp), %rdx                /* the caller's return address */
    jmp     leaseguard_dlsym_on_handle
.Lcaller_relative:
    movq    leaseguard_real_dlsym(%rip), %rax
    testq   %rax, %rax
    je      .Lresolve
    jmp     *%rax
.Lresolve:
    /* First use before the constructor ran: find the real dlsym, keeping the arguments. */
    pushq   %rdi
    .cfi_adjust_cfa_offset 8
    pushq   %rsi
    .cfi_adjust_cfa_offset 8
    subq    $8, %rsp                    /* keep the stack 16-byte aligned for the call */
    .cfi_adjust_cfa_offset 8
    call    leaseguard_resolve_real_dlsym
    addq    $8, %rsp
    .cfi_adjust_cfa_offset -8
    popq    %rsi
    .cfi_adjust_cfa_offset -8
    popq    %rdi
    .cfi_adjust_cfa_offset -8
    testq   %rax, %rax
    je      .Lnone
    jmp     *%rax
.Lnone:
    xorl    %eax, %eax
    ret
    .cfi_endproc
    .size   dlsym, .-dlsym

    .section .note.GNU-stack,"",@progbits
