package unix

import xunix "golang.org/x/sys/unix"

// ESRCH: no such process or thread (a thread that exited while being pinned).
const ESRCH = xunix.ESRCH
