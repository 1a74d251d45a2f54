// `leaseguard slurm prolog|task-prolog|epilog`: every process of a Slurm job, all its steps,
// under one lease of the node's authority (docs/lease-authority.md, "Slurm").
//
//   prolog       (slurmd, as root, when the job is allocated: PrologFlags=Alloc) begins a
//                lease for the job's user named by the job id, with no holder, a time-to-live
//                to the job's end where Slurm says it (SLURM_JOB_END_TIME), and makes the
//                job's directory DIR/JOBID (the user's, 0700) for its journals;
//   task-prolog  (as the user, before each task of each step) puts the preload and the lease's
//                mark in the task's environment (Slurm reads the "export" lines it prints);
//   epilog       (as root, when the job is over) ends the lease, waits for its teardown, writes
//                the job's report (as the user) into DIR/JOBID, and exits 1 where a process
//                survived SIGKILL or the device still holds the job's memory: Slurm drains
//                the node.
//
// The lease's id lies beside the job's directory in DIR/JOBID.lease, root's: the user can
// change nothing the epilog acts on.
#pragma once

#include "cli_options.h"

namespace leaseguard::cli {

// 0 when done; epilog 1 when memory remains; 2 for leaseguard's own errors (one line on
// stderr). task-prolog exits 0 whatever happens: a job is never stopped by leaseguard.
int slurm_command(const SlurmOptions &options);

}  // namespace leaseguard::cli
