#ifndef REACHD_SYSTEMD_SHIM_H
#define REACHD_SYSTEMD_SHIM_H

#include <stdint.h>
#include <systemd/sd-bus.h>

/* What Swift cannot express of sd-bus: the vtable macros and the variadic calls. */

typedef int (*reachd_method_handler)(sd_bus_message *message, void *userdata, sd_bus_error *error);
typedef int (*reachd_property_getter)(sd_bus *bus, const char *path, const char *interface, const char *property,
                                      sd_bus_message *reply, void *userdata, sd_bus_error *error);

/* One member of an interface, as BusInterface declares it. */
typedef enum reachd_bus_member_kind { REACHD_BUS_PROPERTY, REACHD_BUS_METHOD, REACHD_BUS_SIGNAL } reachd_bus_member_kind;

typedef struct reachd_bus_member {
    reachd_bus_member_kind kind;
    const char *name;
    /* A property's type, a method's arguments, a signal's arguments. */
    const char *signature;
    /* A method's reply (NULL: none). */
    const char *result;
    /* A property that never changes while its object is served (else: it emits PropertiesChanged). */
    int constant;
} reachd_bus_member;

/* Where every member of every interface built by reachd_bus_vtable_new dispatches (one pair per process). */
void reachd_bus_set_dispatch(reachd_method_handler method, reachd_property_getter property);

/* A vtable of `members` (copied; it lives as long as the process), or NULL when out of memory. */
const sd_bus_vtable *reachd_bus_vtable_new(const reachd_bus_member *members, size_t count);

/* A minimal org.freedesktop.DBus on a peer-to-peer connection: Hello (a unique name),
 * AddMatch/RemoveMatch (accepted), GetNameOwner (the peer owns every name), so that
 * bus clients such as busctl and gdbus talk to it. */
int reachd_bus_add_broker(sd_bus *bus, sd_bus_slot **slot);

int reachd_bus_reply_string(sd_bus_message *call, const char *value);
int reachd_bus_reply_empty(sd_bus_message *call);

/* Emits a signal with `count` (1 or 2) string arguments, each given as its bytes and
 * their number, not NUL-terminated. The bytes must be valid UTF-8 (a Swift String's
 * are): sd-bus is not asked to check them again, which on a path document was a fifth
 * of what reachd ran between its last route lookup and StatusChanged (BENCHMARKS.md §37).
 * A NUL among them is refused (-EINVAL): a D-Bus string cannot carry one. */
int reachd_bus_emit(sd_bus *bus, const char *path, const char *interface, const char *member, int count,
                    const void *first, size_t first_length, const void *second, size_t second_length);

/* Client side: calls a method taking zero, one or two strings (second only with argument),
 * returning zero or one string.
 * *result is malloc'ed (free it) or NULL when the method returns nothing. *reply_cookie (unless NULL) is
 * the reply's serial: the daemon's signals with a lower one were sent before the reply. */
int reachd_bus_call(sd_bus *bus, const char *destination, const char *path, const char *interface, const char *member,
                    const char *argument, const char *second, uint64_t timeout_usec, char **result, uint64_t *reply_cookie,
                    sd_bus_error *error);

/* Reads one or two strings of a message (second may be NULL). */
int reachd_bus_read(sd_bus_message *message, const char **first, const char **second);

/* The effective UID of the sender of a call (bus or peer-to-peer), or a negative errno. */
int reachd_bus_sender_euid(sd_bus_message *message, uid_t *uid);

/* The NetworkManager-compatible surface (docs/desktop-apps.md): the read-only subset GLib's and Qt's
 * NetworkManager backends read. */
#define REACHD_NM_NAME "org.freedesktop.NetworkManager"
#define REACHD_NM_PATH "/org/freedesktop/NetworkManager"
#define REACHD_NM_INTERFACE "org.freedesktop.NetworkManager"
#define REACHD_NM_ACTIVE_INTERFACE "org.freedesktop.NetworkManager.Connection.Active"
#define REACHD_NM_DEVICE_INTERFACE "org.freedesktop.NetworkManager.Device"

int reachd_nm_emit_state_changed(sd_bus *bus, uint32_t state);
int reachd_bus_reply_u32(sd_bus_message *call, uint32_t value);

#endif
