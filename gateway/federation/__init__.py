"""Federation: a primary gateway's fleet view over peer gateways (docs/federation.md).

Importable without rclpy. Pure modules: `settings` (budgets, peers), `health` (liveness and
backoff), `fleet` (entity merge), `wire` (entity declaration), `items` (peer items in the local
schema), `combine` (collection merge), `connect_auth` (robot identity over connect-out),
`mdns_trust` (what mDNS may change). I/O: `client` (pooled session per peer), `peers`
(probe and refresh loops), `mdns` (the only zeroconf importer), `fanout`, `forward`, `relay`
(fault stream), `routes` (`GET /x-vendor-entities`), and `service`, which ties them together.
`install` builds `feature.Federation`, the one feature service the app starts (connect-out,
the announcer or the peers), when a setting asks for it.
"""
