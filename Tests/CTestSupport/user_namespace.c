// The test process as an ordinary user: its own user, mount and network namespaces, so that
// the tests that build networks in namespaces run against the real kernel as any user
// (docs/development.md, "Tests as any user"). Done before main, while the process has one
// thread: unshare(CLONE_NEWUSER) refuses a process with several.
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/capability.h>
#include "CTestSupport.h"

#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif

static bool entered = false;

bool reachd_tests_user_namespace(void) { return entered; }

static bool write_file(const char *path, const char *text) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return false;
    bool written = write(fd, text, strlen(text)) == (ssize_t)strlen(text);
    close(fd);
    return written;
}

// `directory` writable by this user (ip netns add makes its files in /run/netns, the tests
// write /etc/netns/NAME): a tmpfs on it. When it does not exist its parent cannot be written
// either, so the parent is covered by a tmpfs whose entries link to the parent as it was,
// kept as a detached copy moved under the tmpfs (nothing left on the host's disk).
static bool make_writable(const char *parent, const char *name) {
    char directory[64];
    snprintf(directory, sizeof directory, "%s/%s", parent, name);
    struct stat status;
    if (stat(directory, &status) == 0) return mount("tmpfs", directory, "tmpfs", 0, "mode=0755") == 0;
    int tree = (int)syscall(SYS_open_tree, AT_FDCWD, parent, OPEN_TREE_CLONE | AT_RECURSIVE | O_CLOEXEC);
    if (tree < 0) return false;
    bool made = false, covered = false;
    char host[64];
    snprintf(host, sizeof host, "%s/.host", parent);
    if ((covered = mount("tmpfs", parent, "tmpfs", 0, "mode=0755") == 0) && mkdir(host, 0755) == 0
        && syscall(SYS_move_mount, tree, "", AT_FDCWD, host, MOVE_MOUNT_F_EMPTY_PATH) == 0) {
        DIR *entries = opendir(host);
        made = entries != NULL;
        for (struct dirent *entry; made && (entry = readdir(entries)) != NULL;) {
            if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0) continue;
            char target[512], link[512];
            snprintf(target, sizeof target, "%s/%s", host, entry->d_name);
            snprintf(link, sizeof link, "%s/%s", parent, entry->d_name);
            made = symlink(target, link) == 0;
        }
        if (entries) closedir(entries);
        made = made && mkdir(directory, 0755) == 0;
    }
    close(tree);
    // Half made, the parent would hide what it held from every test: uncovered again.
    if (covered && !made) umount2(parent, MNT_DETACH);
    return made;
}

static bool loopback_up(void) {
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return false;
    struct ifreq request;
    memset(&request, 0, sizeof request);
    strcpy(request.ifr_name, "lo");
    bool up = ioctl(fd, SIOCGIFFLAGS, &request) == 0
        && (request.ifr_flags |= IFF_UP, ioctl(fd, SIOCSIFFLAGS, &request) == 0);
    close(fd);
    return up;
}

// Sets this process's capabilities to `kept` alone, and raises them as ambient so that the
// programs it runs (`ip`, sysctl, reachd) have them too.
static bool set_capabilities(const int *kept, size_t count) {
    struct __user_cap_header_struct header = { _LINUX_CAPABILITY_VERSION_3, 0 };
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof data);
    for (size_t i = 0; i < count; i++) {
        data[kept[i] / 32].effective |= 1u << (kept[i] % 32);
        data[kept[i] / 32].permitted |= 1u << (kept[i] % 32);
        data[kept[i] / 32].inheritable |= 1u << (kept[i] % 32);
    }
    if (syscall(SYS_capset, &header, data) != 0) return false;
    for (size_t i = 0; i < count; i++)
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, kept[i], 0, 0) != 0) return false;
    return true;
}

// What building networks needs: the rest (reading any file of this user, for one) would change
// what the other tests prove. These reach no further than the namespaces made here.
static const int network_capabilities[] = { CAP_NET_ADMIN, CAP_NET_BIND_SERVICE, CAP_NET_RAW, CAP_SYS_ADMIN };

static void refused(const char *step) {
    fprintf(stderr, "reachd tests: no user namespace of their own (%s: %s): the tests that create network namespaces are skipped\n",
            step, strerror(errno));
}

__attribute__((constructor)) static void reachd_tests_enter_user_namespace(void) {
    const char *wanted = getenv("REACHD_TESTS_USER_NAMESPACE");
    if (geteuid() == 0 || (wanted && strcmp(wanted, "0") == 0)) return;
    uid_t user = geteuid();
    gid_t group = getegid();
    if (unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET) != 0) {
        refused("unshare");
        return;
    }
    char map[64];
    snprintf(map, sizeof map, "%u %u 1\n", user, user);
    bool ready = write_file("/proc/self/uid_map", map) && write_file("/proc/self/setgroups", "deny");
    snprintf(map, sizeof map, "%u %u 1\n", group, group);
    // Loopback first: the tests that need no namespace use it, whatever fails after.
    ready = ready && write_file("/proc/self/gid_map", map) && loopback_up()
        && mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) == 0
        && make_writable("/run", "netns") && make_writable("/etc", "netns")
        && set_capabilities(network_capabilities, sizeof network_capabilities / sizeof network_capabilities[0]);
    if (!ready) {
        refused("setting it up");
        // None of the namespace's capabilities either: the other tests prove what an ordinary user may.
        set_capabilities(NULL, 0);
        return;
    }
    entered = true;
}
