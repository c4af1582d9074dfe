#ifndef REACHD_SYSTEMD_SHIM_H
#define REACHD_SYSTEMD_SHIM_H

#include <stdint.h>
#include <systemd/sd-bus.h>

/* What Swift cannot express of sd-bus: the vtable macros and the variadic calls. */

#define REACHD_BUS_NAME "io.reachd.Reachability1"
#define REACHD_BUS_PATH "/io/reachd/Reachability1"
#define REACHD_BUS_INTERFACE "io.reachd.Reachability1"

typedef int (*reachd_method_handler)(sd_bus_message *message, void *userdata, sd_bus_error *error);
typedef int (*reachd_property_getter)(sd_bus *bus, const char *path, const char *interface, const char *property,
                                      sd_bus_message *reply, void *userdata, sd_bus_error *error);

typedef struct reachd_bus_handlers {
    reachd_method_handler describe;
    reachd_method_handler route;
    reachd_method_handler trust_status;
    reachd_method_handler recheck_trust;
    reachd_method_handler reload;
    reachd_method_handler check_connectivity;
    reachd_method_handler interfaces;
    reachd_method_handler watch_interfaces;
    reachd_method_handler watch_path;
    reachd_property_getter property;
} reachd_bus_handlers;

/* Installs the handlers every object added afterwards dispatches to (one set per process). */
void reachd_bus_set_handlers(reachd_bus_handlers handlers);

/* The io.reachd.Reachability1 object at REACHD_BUS_PATH. */
int reachd_bus_add_object(sd_bus *bus, sd_bus_slot **slot, void *userdata);

/* A minimal org.freedesktop.DBus on a peer-to-peer connection: Hello (a unique name),
 * AddMatch/RemoveMatch (accepted), so that bus clients such as busctl talk to it. */
int reachd_bus_add_broker(sd_bus *bus, sd_bus_slot **slot);

int reachd_bus_reply_string(sd_bus_message *call, const char *value);
int reachd_bus_reply_empty(sd_bus_message *call);

/* Emits a signal of the interface with one or two string arguments (second may be NULL). */
int reachd_bus_emit(sd_bus *bus, const char *destination, const char *member, const char *first, const char *second);

/* Client side: calls a method of the interface taking zero, one or two strings (second only with argument),
 * returning zero or one string.
 * *result is malloc'ed (free it) or NULL when the method returns nothing. *reply_cookie (unless NULL) is
 * the reply's serial: the daemon's signals with a lower one were sent before the reply. */
int reachd_bus_call(sd_bus *bus, const char *destination, const char *member, const char *argument,
                    const char *second, uint64_t timeout_usec, char **result, uint64_t *reply_cookie, sd_bus_error *error);

/* Reads one or two strings of a message (second may be NULL). */
int reachd_bus_read(sd_bus_message *message, const char **first, const char **second);

/* The effective UID of the sender of a call (bus or peer-to-peer), or a negative errno. */
int reachd_bus_sender_euid(sd_bus_message *message, uid_t *uid);

/* The NetworkManager-compatible surface (docs/desktop-apps.md): the read-only subset GLib's and Qt's
 * NetworkManager backends read. One property getter serves the three interfaces. */
#define REACHD_NM_NAME "org.freedesktop.NetworkManager"
#define REACHD_NM_PATH "/org/freedesktop/NetworkManager"
#define REACHD_NM_INTERFACE "org.freedesktop.NetworkManager"
#define REACHD_NM_ACTIVE_INTERFACE "org.freedesktop.NetworkManager.Connection.Active"
#define REACHD_NM_DEVICE_INTERFACE "org.freedesktop.NetworkManager.Device"

typedef struct reachd_nm_handlers {
    reachd_method_handler state;
    reachd_method_handler check_connectivity;
    reachd_property_getter property;
} reachd_nm_handlers;

void reachd_nm_set_handlers(reachd_nm_handlers handlers);
int reachd_nm_add_manager(sd_bus *bus, sd_bus_slot **slot, void *userdata);
int reachd_nm_add_object_manager(sd_bus *bus, sd_bus_slot **slot);
int reachd_nm_add_active_connection(sd_bus *bus, sd_bus_slot **slot, const char *path, void *userdata);
int reachd_nm_add_device(sd_bus *bus, sd_bus_slot **slot, const char *path, void *userdata);
int reachd_nm_emit_state_changed(sd_bus *bus, uint32_t state);
int reachd_bus_reply_u32(sd_bus_message *call, uint32_t value);

#endif
