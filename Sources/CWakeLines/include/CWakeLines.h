#ifndef REACHD_CWAKELINES_H
#define REACHD_CWAKELINES_H

/// Loads every line of the program's wake-up list at once, then the stack the wake-up's
/// calls write next (see wake_lines.c).
/// CLinuxShim's reachd_touch_wake_lines calls it in a program linked with this
/// target; nothing else needs to.
void reachd_wake_lines_load(void);

#endif
