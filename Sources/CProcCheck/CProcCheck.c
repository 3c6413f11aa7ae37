#include "CProcCheck.h"

#include <string.h>
#include <unistd.h>

/* Without /proc (a bare chroot) the Swift runtime reads no command line, so every
   option would be lost and the embedded demo would start in place of what was
   asked; and libdispatch's worker monitor, which reads /proc/self/task, traps as
   soon as a worker thread runs. So the check is made here, before main and before
   any thread starts, and the process stops with exit code 1 and a clear message. */
__attribute__((constructor)) static void presence_gateway_require_proc(void) {
    if (access("/proc/self/cmdline", R_OK) == 0) return;
    static const char message[] =
        "presence-gateway: /proc is not mounted, so the command line cannot be read "
        "(mount -t proc proc /proc)\n";
    ssize_t written = write(STDERR_FILENO, message, sizeof message - 1);
    (void)written;
    _exit(1);
}
