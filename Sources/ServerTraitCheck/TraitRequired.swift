// ServerTrust is built on swift-nio, swift-nio-ssl, swift-crypto and swift-certificates, which this
// package brings in only under its `ServerTrust` trait (on by default): an app that turned the traits
// off to depend on the lighter products asks for this one by name (docs/swift-libraries.md). This
// module is ServerTrust's first dependency, so the build stops here, with these words.
#if !ServerTrust
#error(
    """
    ServerTrust needs reachd's ServerTrust trait: \
    .package(path: "…/reachd", traits: ["ServerTrust"]) (or leave `traits:` out for the defaults)
    """)
#endif
