/*
 * Opening input files without blocking on special files.
 *
 * open(2) of a FIFO for reading waits until some process opens it for
 * writing, so a FIFO left where a data file or a log entry belongs would
 * hang a reader forever before any check could run.  With O_NONBLOCK the
 * open returns at once; fstat on the descriptor (not stat on the path,
 * which could change between the two calls) then tells what was opened.
 * Only regular files are accepted: devices and sockets have no stable size
 * and directories cannot be read as bytes.  O_NONBLOCK has no effect on
 * regular files, but it is cleared anyway so that a descriptor handed on
 * never surprises a later reader.
 */
#include "common/common.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

int df_file_open_regular(const char *path, int extra_flags, int *fd, struct stat *st) {
    *fd = -1;
    struct stat local;
    struct stat *s = st ? st : &local;
    int f;
    do f = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY | extra_flags);
    while (f < 0 && errno == EINTR);
    if (f < 0) return errno;
    if (fstat(f, s) != 0) {
        int e = errno;
        close(f);
        return e;
    }
    if (!S_ISREG(s->st_mode)) {
        close(f);
        return -1;
    }
    int fl = fcntl(f, F_GETFL);
    if (fl < 0 || fcntl(f, F_SETFL, fl & ~O_NONBLOCK) < 0) {
        int e = errno;
        close(f);
        return e;
    }
    *fd = f;
    return 0;
}

const char *df_file_kind_name(unsigned mode) {
    mode_t m = (mode_t)mode;
    if (S_ISREG(m)) return "a regular file";
    if (S_ISDIR(m)) return "a directory";
    if (S_ISFIFO(m)) return "a FIFO";
    if (S_ISSOCK(m)) return "a socket";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    if (S_ISLNK(m)) return "a symbolic link";
    return "not a regular file";
}
