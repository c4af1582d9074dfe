#include "CSystemdShim.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static reachd_bus_handlers handlers;

void reachd_bus_set_handlers(reachd_bus_handlers value) { handlers = value; }

static int describe(sd_bus_message *m, void *u, sd_bus_error *e) { return handlers.describe(m, u, e); }
static int route(sd_bus_message *m, void *u, sd_bus_error *e) { return handlers.route(m, u, e); }
static int trust_status(sd_bus_message *m, void *u, sd_bus_error *e) { return handlers.trust_status(m, u, e); }
static int recheck_trust(sd_bus_message *m, void *u, sd_bus_error *e) { return handlers.recheck_trust(m, u, e); }
static int reload(sd_bus_message *m, void *u, sd_bus_error *e) { return handlers.reload(m, u, e); }
static int check_connectivity(sd_bus_message *m, void *u, sd_bus_error *e) { return handlers.check_connectivity(m, u, e); }
static int interfaces(sd_bus_message *m, void *u, sd_bus_error *e) { return handlers.interfaces(m, u, e); }
static int watch_interfaces(sd_bus_message *m, void *u, sd_bus_error *e) { return handlers.watch_interfaces(m, u, e); }
static int watch_path(sd_bus_message *m, void *u, sd_bus_error *e) { return handlers.watch_path(m, u, e); }
static int property(sd_bus *b, const char *p, const char *i, const char *n, sd_bus_message *r, void *u, sd_bus_error *e) {
    return handlers.property(b, p, i, n, r, u, e);
}

static const sd_bus_vtable reachability_vtable[] = {
    SD_BUS_VTABLE_START(0),
    SD_BUS_PROPERTY("Status", "s", property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("Reason", "s", property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("Interface", "s", property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("InterfaceKind", "s", property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("Expensive", "b", property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("IPv4", "b", property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("IPv6", "b", property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("VPN", "s", property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("Trust", "s", property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("Connectivity", "s", property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("PortalURL", "s", property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("SupportsDNS", "b", property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("DNSServers", "as", property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("CaptivePortalAPI", "s", property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("CaptivePortalSource", "s", property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("CaptivePortalStatus", "s", property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("VenueInfoURL", "s", property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("SessionExpires", "t", property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("BytesRemaining", "x", property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("CanExtendSession", "b", property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_METHOD("Describe", "", "s", describe, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD("Route", "s", "s", route, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD("TrustStatus", "", "s", trust_status, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD("RecheckTrust", "", "", recheck_trust, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD("Reload", "", "", reload, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD("CheckConnectivity", "", "s", check_connectivity, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD("Interfaces", "", "s", interfaces, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD("WatchInterfaces", "", "s", watch_interfaces, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD("WatchPath", "ss", "s", watch_path, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_SIGNAL("StatusChanged", "ss", 0),
    SD_BUS_SIGNAL("InterfaceChanged", "ss", 0),
    SD_BUS_SIGNAL("TrustChanged", "ss", 0),
    SD_BUS_SIGNAL("PinFailure", "s", 0),
    SD_BUS_SIGNAL("PathChanged", "ss", 0),
    SD_BUS_VTABLE_END
};

int reachd_bus_add_object(sd_bus *bus, sd_bus_slot **slot, void *userdata) {
    return sd_bus_add_object_vtable(bus, slot, REACHD_BUS_PATH, REACHD_BUS_INTERFACE, reachability_vtable, userdata);
}

static int broker_hello(sd_bus_message *m, void *u, sd_bus_error *e) {
    (void) u; (void) e;
    static unsigned long next = 1;
    char name[32];
    snprintf(name, sizeof name, ":1.%lu", next++);
    return sd_bus_reply_method_return(m, "s", name);
}

static int broker_ok(sd_bus_message *m, void *u, sd_bus_error *e) {
    (void) u; (void) e;
    return sd_bus_reply_method_return(m, "");
}

static int broker_name_owner(sd_bus_message *m, void *u, sd_bus_error *e) {
    (void) u; (void) e;
    return sd_bus_reply_method_return(m, "s", REACHD_BUS_NAME);
}

static const sd_bus_vtable broker_vtable[] = {
    SD_BUS_VTABLE_START(0),
    SD_BUS_METHOD("Hello", "", "s", broker_hello, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD("AddMatch", "s", "", broker_ok, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD("RemoveMatch", "s", "", broker_ok, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD("GetNameOwner", "s", "s", broker_name_owner, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_VTABLE_END
};

int reachd_bus_add_broker(sd_bus *bus, sd_bus_slot **slot) {
    return sd_bus_add_object_vtable(bus, slot, "/org/freedesktop/DBus", "org.freedesktop.DBus", broker_vtable, NULL);
}

int reachd_bus_reply_string(sd_bus_message *call, const char *value) {
    return sd_bus_reply_method_return(call, "s", value);
}

int reachd_bus_reply_empty(sd_bus_message *call) {
    return sd_bus_reply_method_return(call, "");
}

int reachd_bus_emit(sd_bus *bus, const char *destination, const char *member, const char *first, const char *second) {
    sd_bus_message *message = NULL;
    int r = sd_bus_message_new_signal(bus, &message, REACHD_BUS_PATH, REACHD_BUS_INTERFACE, member);
    if (r < 0) return r;
    if (destination) r = sd_bus_message_set_destination(message, destination);
    if (r >= 0) r = second ? sd_bus_message_append(message, "ss", first, second) : sd_bus_message_append(message, "s", first);
    if (r >= 0) r = sd_bus_send(bus, message, NULL);
    sd_bus_message_unref(message);
    return r;
}

int reachd_bus_call(sd_bus *bus, const char *destination, const char *member, const char *argument,
                    const char *second, uint64_t timeout_usec, char **result, uint64_t *reply_cookie, sd_bus_error *error) {
    sd_bus_message *call = NULL, *reply = NULL;
    *result = NULL;
    int r = sd_bus_message_new_method_call(bus, &call, destination, REACHD_BUS_PATH, REACHD_BUS_INTERFACE, member);
    if (r < 0) return r;
    if (argument && second) r = sd_bus_message_append(call, "ss", argument, second);
    else if (argument) r = sd_bus_message_append(call, "s", argument);
    if (r >= 0) r = sd_bus_call(bus, call, timeout_usec, error, &reply);
    if (r >= 0 && reply_cookie) r = sd_bus_message_get_cookie(reply, reply_cookie);
    if (r >= 0 && !sd_bus_message_is_empty(reply)) {
        const char *text = NULL;
        r = sd_bus_message_read(reply, "s", &text);
        if (r >= 0) {
            *result = strdup(text);
            if (!*result) r = -ENOMEM;
        }
    }
    sd_bus_message_unref(reply);
    sd_bus_message_unref(call);
    return r;
}

int reachd_bus_read(sd_bus_message *message, const char **first, const char **second) {
    return second ? sd_bus_message_read(message, "ss", first, second) : sd_bus_message_read(message, "s", first);
}

int reachd_bus_sender_euid(sd_bus_message *message, uid_t *uid) {
    sd_bus_creds *creds = NULL;
    int r = sd_bus_query_sender_creds(message, SD_BUS_CREDS_EUID, &creds);
    if (r < 0) return r;
    r = sd_bus_creds_get_euid(creds, uid);
    sd_bus_creds_unref(creds);
    return r;
}

static reachd_nm_handlers nm_handlers;

void reachd_nm_set_handlers(reachd_nm_handlers value) { nm_handlers = value; }

static int nm_state(sd_bus_message *m, void *u, sd_bus_error *e) { return nm_handlers.state(m, u, e); }
static int nm_check_connectivity(sd_bus_message *m, void *u, sd_bus_error *e) { return nm_handlers.check_connectivity(m, u, e); }
static int nm_property(sd_bus *b, const char *p, const char *i, const char *n, sd_bus_message *r, void *u, sd_bus_error *e) {
    return nm_handlers.property(b, p, i, n, r, u, e);
}

/* Names and signatures are NetworkManager's (introspection/org.freedesktop.NetworkManager*.xml). */
static const sd_bus_vtable nm_manager_vtable[] = {
    SD_BUS_VTABLE_START(0),
    SD_BUS_PROPERTY("State", "u", nm_property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("Connectivity", "u", nm_property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("Metered", "u", nm_property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("PrimaryConnection", "o", nm_property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("PrimaryConnectionType", "s", nm_property, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_PROPERTY("NetworkingEnabled", "b", nm_property, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_PROPERTY("Version", "s", nm_property, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_METHOD("state", "", "u", nm_state, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_METHOD("CheckConnectivity", "", "u", nm_check_connectivity, SD_BUS_VTABLE_UNPRIVILEGED),
    SD_BUS_SIGNAL("StateChanged", "u", 0),
    SD_BUS_VTABLE_END
};

/* An active connection and its device are replaced, under a new path, whenever anything
 * about them changes (as NetworkManager activates a new connection): their values are constant. */
static const sd_bus_vtable nm_active_connection_vtable[] = {
    SD_BUS_VTABLE_START(0),
    SD_BUS_PROPERTY("Devices", "ao", nm_property, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_PROPERTY("Type", "s", nm_property, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_PROPERTY("Vpn", "b", nm_property, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_VTABLE_END
};

static const sd_bus_vtable nm_device_vtable[] = {
    SD_BUS_VTABLE_START(0),
    SD_BUS_PROPERTY("Interface", "s", nm_property, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_PROPERTY("DeviceType", "u", nm_property, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_PROPERTY("Metered", "u", nm_property, 0, SD_BUS_VTABLE_PROPERTY_CONST),
    SD_BUS_VTABLE_END
};

int reachd_nm_add_manager(sd_bus *bus, sd_bus_slot **slot, void *userdata) {
    return sd_bus_add_object_vtable(bus, slot, REACHD_NM_PATH, REACHD_NM_INTERFACE, nm_manager_vtable, userdata);
}

/* libnm (nmcli, nm-online) reads NetworkManager's objects through the object
   manager at /org/freedesktop; sd-bus answers GetManagedObjects from the vtables. */
int reachd_nm_add_object_manager(sd_bus *bus, sd_bus_slot **slot) {
    return sd_bus_add_object_manager(bus, slot, "/org/freedesktop");
}

int reachd_nm_add_active_connection(sd_bus *bus, sd_bus_slot **slot, const char *path, void *userdata) {
    return sd_bus_add_object_vtable(bus, slot, path, REACHD_NM_ACTIVE_INTERFACE, nm_active_connection_vtable, userdata);
}

int reachd_nm_add_device(sd_bus *bus, sd_bus_slot **slot, const char *path, void *userdata) {
    return sd_bus_add_object_vtable(bus, slot, path, REACHD_NM_DEVICE_INTERFACE, nm_device_vtable, userdata);
}

int reachd_nm_emit_state_changed(sd_bus *bus, uint32_t state) {
    return sd_bus_emit_signal(bus, REACHD_NM_PATH, REACHD_NM_INTERFACE, "StateChanged", "u", state);
}

int reachd_bus_reply_u32(sd_bus_message *call, uint32_t value) {
    return sd_bus_reply_method_return(call, "u", value);
}
