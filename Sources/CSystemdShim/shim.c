#include "CSystemdShim.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every interface served here is declared once, in Swift (BusInterface): its vtable
 * is built from that declaration, and every member dispatches through these two. */
static reachd_method_handler method_dispatch;
static reachd_property_getter property_dispatch;

void reachd_bus_set_dispatch(reachd_method_handler method, reachd_property_getter property) {
    method_dispatch = method;
    property_dispatch = property;
}

static int dispatch_method(sd_bus_message *m, void *u, sd_bus_error *e) { return method_dispatch(m, u, e); }
static int dispatch_property(sd_bus *b, const char *p, const char *i, const char *n, sd_bus_message *r, void *u, sd_bus_error *e) {
    return property_dispatch(b, p, i, n, r, u, e);
}

const sd_bus_vtable *reachd_bus_vtable_new(const reachd_bus_member *members, size_t count) {
    sd_bus_vtable *table = calloc(count + 2, sizeof *table);
    if (!table) return NULL;
    table[0] = (sd_bus_vtable) SD_BUS_VTABLE_START(0);
    for (size_t i = 0; i < count; i++) {
        const reachd_bus_member *member = &members[i];
        /* The table lives as long as the process: so do its strings. */
        const char *name = strdup(member->name), *signature = strdup(member->signature);
        const char *result = strdup(member->result ? member->result : "");
        if (!name || !signature || !result) return NULL;
        switch (member->kind) {
        case REACHD_BUS_PROPERTY:
            table[i + 1] = (sd_bus_vtable) SD_BUS_PROPERTY(name, signature, dispatch_property, 0,
                member->constant ? SD_BUS_VTABLE_PROPERTY_CONST : SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE);
            break;
        case REACHD_BUS_METHOD:
            table[i + 1] = (sd_bus_vtable) SD_BUS_METHOD(name, signature, result, dispatch_method, SD_BUS_VTABLE_UNPRIVILEGED);
            break;
        default:
            table[i + 1] = (sd_bus_vtable) SD_BUS_SIGNAL(name, signature, 0);
            break;
        }
    }
    table[count + 1] = (sd_bus_vtable) SD_BUS_VTABLE_END;
    return table;
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

/* On a peer connection the peer owns every name a client asks about. */
static int broker_name_owner(sd_bus_message *m, void *u, sd_bus_error *e) {
    (void) u; (void) e;
    const char *name = NULL;
    int r = sd_bus_message_read(m, "s", &name);
    if (r < 0) return r;
    return sd_bus_reply_method_return(m, "s", name);
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

/* Appends `length` bytes of valid UTF-8 as a string argument, copied whole. */
static int append_utf8(sd_bus_message *message, const void *bytes, size_t length) {
    if (length > 0 && memchr(bytes, 0, length)) return -EINVAL;
    char *space = NULL;
    int r = sd_bus_message_append_string_space(message, length, &space);
    if (r < 0) return r;
    if (length > 0) memcpy(space, bytes, length);
    return 0;
}

int reachd_bus_emit(sd_bus *bus, const char *path, const char *interface, const char *member, int count,
                    const void *first, size_t first_length, const void *second, size_t second_length) {
    sd_bus_message *message = NULL;
    int r = sd_bus_message_new_signal(bus, &message, path, interface, member);
    if (r < 0) return r;
    r = append_utf8(message, first, first_length);
    if (r >= 0 && count > 1) r = append_utf8(message, second, second_length);
    if (r >= 0) r = sd_bus_send(bus, message, NULL);
    sd_bus_message_unref(message);
    return r;
}

int reachd_bus_call(sd_bus *bus, const char *destination, const char *path, const char *interface, const char *member,
                    const char *argument, const char *second, uint64_t timeout_usec, char **result, uint64_t *reply_cookie,
                    sd_bus_error *error) {
    sd_bus_message *call = NULL, *reply = NULL;
    *result = NULL;
    int r = sd_bus_message_new_method_call(bus, &call, destination, path, interface, member);
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

int reachd_nm_emit_state_changed(sd_bus *bus, uint32_t state) {
    return sd_bus_emit_signal(bus, REACHD_NM_PATH, REACHD_NM_INTERFACE, "StateChanged", "u", state);
}

int reachd_bus_reply_u32(sd_bus_message *call, uint32_t value) {
    return sd_bus_reply_method_return(call, "u", value);
}
