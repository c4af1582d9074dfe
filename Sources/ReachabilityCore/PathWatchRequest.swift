/// What a `WatchPath(destination, interfaceTypes)` call asks the daemon for
/// (docs/api.md): the path to one destination, or the default path, leaving only
/// by some interface types. Client and daemon name a watch by the same `key`.
package struct PathWatchRequest: Hashable, Sendable {
    /// A host name or address; "" for the default path.
    package var destination: String
    package var interfaceTypes: Set<InterfaceType>

    package init(destination: String, interfaceTypes: Set<InterfaceType>) {
        self.destination = destination
        self.interfaceTypes = interfaceTypes
    }

    /// The types as `WatchPath()` takes them: `wifi,wired`, "" for all.
    package var interfaceTypesText: String { InterfaceType.listText(interfaceTypes) }

    /// `PathChanged`'s first argument: `DESTINATION|TYPES`, types in canonical order.
    package var key: String { "\(destination)|\(interfaceTypesText)" }
}
