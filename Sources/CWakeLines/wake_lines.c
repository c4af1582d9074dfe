// The lines of code and static data a change's wake-up touches, loaded all at once
// when reachctl's monitor wakes with a message to read (docs/development.md, "The
// wake-up's lines").
//
// After seconds of idle a change's wake-up runs on cold caches, and fetches its code
// and the runtime's metadata one dependent miss after another: each miss waits for
// the instruction or the load before it. Loaded here first, independently, the
// misses overlap; the wake-up then runs on lines already near (BENCHMARKS.md §41).
//
// Then the stack just below the loading frame, which the wake-up's calls write next:
// as cold as the rest after the idle, and the same lines at every wake-up.
//
// The list is written into the linked program by release/wake-lines.py, from
// release/wake-lines.txt (each line named by its symbol and offset, so the list
// survives a rebuild); as compiled it is empty, and this does nothing. Only the
// programs link this target: an app using the library carries no list.
#define _GNU_SOURCE // pthread_getattr_np
#include "CWakeLines.h"
#include <pthread.h>
#include <stdint.h>

#define REACHD_WAKE_LINES_CAPACITY 4096

// A magic word wake-lines.py finds the table by, the count, then each line's address
// as an offset from the program's ELF header. Read-only and volatile: written in the
// file after the link, so the compiler must neither fold its zeros nor assume them.
__attribute__((used, section(".reachd_wake_lines"), aligned(64)))
static const volatile uint32_t wake_lines[2 + REACHD_WAKE_LINES_CAPACITY] = {0x6b776472, 0};

// The linker's: where the program's first and past its last mapped byte are.
extern const char __ehdr_start[];
extern const char _end[];

// How far below the loading frame the wake-up's calls reach: a route deletion's, to its
// line, touches 321 lines of the monitor thread's stack, 20.5 KB (scripts/wake-footprint.sh,
// BENCHMARKS.md §43); a few lines more cost less than missing some.
#define REACHD_WAKE_STACK_BYTES 24576

// The lowest address of the calling thread's stack (its guard page is below), found
// once per thread: a thread with less than REACHD_WAKE_STACK_BYTES left below the frame
// is read to its end, not past it. UINTPTR_MAX when unknown: nothing of it is loaded.
static __thread uintptr_t stack_floor;

static uintptr_t thread_stack_floor(void) {
    if (stack_floor == 0) {
        pthread_attr_t attributes;
        void *low = NULL;
        size_t size = 0;
        if (pthread_getattr_np(pthread_self(), &attributes) == 0) {
            if (pthread_attr_getstack(&attributes, &low, &size) != 0) low = NULL;
            pthread_attr_destroy(&attributes);
        }
        stack_floor = low ? (uintptr_t)low : UINTPTR_MAX;
    }
    return stack_floor;
}

void reachd_wake_lines_load(void) {
    uint32_t count = wake_lines[1];
    if (count == 0 || count > REACHD_WAKE_LINES_CAPACITY) return;
    const volatile unsigned char *base = (const volatile unsigned char *)__ehdr_start;
    uintptr_t limit = (uintptr_t)(_end - __ehdr_start);
    unsigned sum = 0;
    // Independent loads: nothing below waits on one before issuing the next.
    for (uint32_t index = 0; index < count; index++) {
        uint32_t offset = wake_lines[2 + index];
        if (offset < limit) sum += base[offset];
    }
    uintptr_t frame = (uintptr_t)__builtin_frame_address(0);
    uintptr_t floor = thread_stack_floor();
    for (uintptr_t below = 64; below <= REACHD_WAKE_STACK_BYTES && frame - below >= floor; below += 64) {
        sum += *(const volatile unsigned char *)(frame - below);
    }
    (void)sum;
}
