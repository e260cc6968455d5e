"""The settings table: every setting the gateway knows, with type, default, bounds and help.

Grouped by feature, each group naming the document that explains it. Loading, coercion and
range checks live in `config`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Setting:
    """One known setting: its type, default, bounds and help text."""

    key: str
    type: type
    default: Any
    help: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] | None = None
    clamp: bool = True  # out of range: clamp with a warning (True) or refuse (False)
    secret: bool = False


def _s(key: str, typ: type, default: Any, help: str, **kw: Any) -> Setting:
    return Setting(key, typ, default, help, **kw)


SETTINGS: tuple[Setting, ...] = (
    _s("server.host", str, "127.0.0.1", "address the HTTP server binds to"),
    _s("server.port", int, 8080, "TCP port of the HTTP server", minimum=1, maximum=65535,
       clamp=False),
    _s("server.executor_threads", int, 4, "threads for blocking ROS graph work",
       minimum=1, maximum=64),
    _s("server.max_uri_length", int, 8192, "longest request URI served (longer: 414)",
       minimum=256, maximum=65536),
    _s("server.tls.enabled", bool, False, "serve HTTPS"),
    _s("server.tls.cert_file", str, "", "TLS certificate (PEM)"),
    _s("server.tls.key_file", str, "", "TLS private key (PEM)", secret=True),
    _s("server.tls.min_version", str, "1.2", "oldest TLS version accepted (1.1 and older never)",
       choices=("1.2", "1.3")),
    _s("server.tls.client_ca_file", str, "",
       "CA bundle (PEM) client certificates must chain to; set: mutual TLS"),
    _s("server.tls.client_auth", str, "required",
       "with a client CA: refuse clients without a certificate (required) or not (optional)",
       choices=("required", "optional")),
    _s("api.vendor", str, "vendor", "vendor word in x-<vendor> keys and X-<Vendor>-* headers"),
    # Wire profile (docs/wire-profiles.md): medkit renders the CONFLICT rows as the reference
    # implementation's clients expect, and makes `medkit` the vendor word unless api.vendor is set.
    _s("api.profile", str, "spec", "response shapes: spec, or medkit for the reference's clients",
       choices=("spec", "medkit")),
    _s("docs.enabled", bool, True, "serve the OpenAPI document at /docs"),
    _s("ros.domain_id", int, -1, "ROS_DOMAIN_ID for the gateway node (-1: from environment)",
       minimum=-1, maximum=232, clamp=False),
    _s("ros.node_name", str, "_diag_gateway", "name of the gateway's own (hidden) ROS node"),
    # Other DDS vendors (docs/ros.md, "Other DDS vendors"): Fast DDS matches by type name.
    _s("ros.dds.match_types_by_name", bool, True,
       "match topics by type name whatever XTypes type information a writer sends (Fast DDS "
       "profile property fastdds.type_propagation=disabled): needed to hear Cyclone DDS "
       "robots; a FASTDDS_DEFAULT_PROFILES_FILE of the user's own is kept as it is"),
    # Frozen nodes (docs/ros.md, "Nodes the rmw cannot name"): a participant that resumed and
    # that DDS does not rediscover makes the gateway re-join DDS with a new participant.
    _s("ros.rejoin.enabled", bool, True,
       "re-join DDS with a new participant when a process on this host resumed and its "
       "participant stays undiscovered (a node frozen past its lease)"),
    _s("ros.rejoin.min_interval_sec", float, 5.0,
       "at most one rejoin per this many seconds (each costs a new DDS participant and "
       "re-creating every subscription, publisher and service server of the gateway)",
       minimum=1.0, maximum=86400.0),
    # Message types (docs/ros.md, "Message types"): interface packages the gateway
    # lacks, served from other ROS install prefixes; core libraries stay the gateway's own.
    _s("ros.interface_paths", tuple, (),
       "ROS install prefixes (/opt/ros/<distro> layout or a colcon install/ tree) whose "
       "interface packages serve message, service and action types the gateway lacks"),
    # Caps on types read from node descriptions (gateway/_fast/typegraph.py): far above any
    # real robot's types; a description past one is refused (501 with the reason), a write
    # past a byte or time budget answers 400.
    _s("ros.type_limits.max_depth", int, 64,
       "deepest nesting of message types in a type description (a recursive one is refused)",
       minimum=1, maximum=1024, clamp=False),
    _s("ros.type_limits.max_fixed_elements", int, 1_000_000,
       "most fixed-array elements in one message of a described or built type (nested "
       "arrays multiply)", minimum=1, maximum=1 << 30, clamp=False),
    _s("ros.type_limits.max_read_bytes", int, 256 << 20,
       "largest sample (CDR bytes) of a described type converted to JSON",
       minimum=1024, maximum=1 << 32, clamp=False),
    _s("ros.type_limits.max_encode_bytes", int, 64 << 20,
       "largest message (CDR bytes) a write of a described type may encode",
       minimum=1024, maximum=1 << 32, clamp=False),
    _s("ros.type_limits.max_build_bytes", int, 64 << 20,
       "largest smallest-message size (CDR bytes) of a service or message type built at run "
       "time", minimum=1024, maximum=1 << 32, clamp=False),
    _s("ros.type_limits.encode_timeout_sec", float, 10.0,
       "time budget of encoding one write of a described type (off the event loop)",
       minimum=0.1, maximum=600.0, clamp=False),
    _s("ros.interface_paths_from_shell", bool, True,
       "also serve, like ros.interface_paths, the interface packages of the prefixes in the "
       "shell's AMENT_PREFIX_PATH that the gateway sets aside from its own ROS"),
    # Service types built at run time from their servers' descriptions (docs/ros.md).
    _s("ros.type_build.on_discovery", bool, True,
       "build a service type the gateway lacks when the graph shows its server (with service "
       "introspection), in the background at low priority; false: at its first call"),
    _s("ros.type_build.cache_max_mb", int, 2048,
       "at start, the least recently used builds in <state_dir>/types go until the rest fit",
       minimum=64, maximum=1 << 20),
    _s("ros.type_build.cache_max_age_days", float, 30.0,
       "at start, builds in <state_dir>/types unused for longer go", minimum=0.0,
       maximum=36500.0),
    _s("discovery.mode", str, "runtime_only", "entity discovery mode",
       choices=("runtime_only", "hybrid", "manifest_only")),
    _s("discovery.refresh_debounce_ms", int, 1000,
       "coalescing window for entity refreshes after graph changes", minimum=0, maximum=60000),
    _s("discovery.poll_interval_ms", int, 200, "ROS graph poll period",
       minimum=20, maximum=10000),
    _s("discovery.idle_poll_interval_ms", int, 1000,
       "ROS graph poll period once the graph has not changed for 10 s (an idle robot's CPU; "
       "back to poll_interval_ms at the next change); 0: always poll_interval_ms",
       minimum=0, maximum=10000),
    _s("discovery.watched_idle_poll_interval_ms", int, 30000,
       "ROS graph poll period of an idle graph while the gateway node's graph guard condition "
       "is watched (a graph change wakes the poll at once; ros/graph/graph_watch.py); 0: no watch, "
       "an idle graph is polled every idle_poll_interval_ms",
       minimum=0, maximum=600000),
    _s("discovery.manifest_path", str, "", "manifest file (hybrid and manifest_only modes)"),
    # Manifest and hybrid discovery (docs/manifest.md).
    _s("discovery.manifest_strict_validation", bool, True,
       "manifest warnings (R008, R009, R013) fail the load like errors"),
    _s("discovery.manifest.fragments_dir", str, "",
       "directory of manifest fragments (*.yaml, *.yml) appended to the manifest (empty: off)"),
    _s("discovery.manifest.watch_interval_ms", int, 500,
       "how often the manifest, fragments and CSV are checked for changes (0: never reload)",
       minimum=0, maximum=600000),
    _s("discovery.manifest.settle_ms", int, 500,
       "a changed manifest, fragment or CSV is loaded once unchanged (size, mtime) this long",
       minimum=0, maximum=60000),
    _s("discovery.inventory.csv_path", str, "",
       "asset inventory CSV (manifest-backed modes; at most 1 MiB)"),
    _s("discovery.runtime.enabled", bool, True,
       "hybrid: link runtime nodes to manifest apps (false: manifest entities only)"),
    _s("discovery.merge_pipeline.gap_fill.allow_heuristic_apps", bool, True,
       "hybrid: unlinked nodes may appear as apps"),
    _s("discovery.merge_pipeline.gap_fill.allow_heuristic_functions", bool, False,
       "hybrid: unlinked nodes' namespaces may appear as functions"),
    _s("discovery.merge_pipeline.gap_fill.namespace_whitelist", tuple, (),
       "hybrid: only nodes in these namespaces (or below) may appear as apps"),
    _s("discovery.merge_pipeline.gap_fill.namespace_blacklist", tuple, (),
       "hybrid: nodes in these namespaces (or below) never appear as apps"),
    _s("entity_cache.capacity", int, 256, "entity cache capacity", minimum=1, maximum=100000),
    _s("topic_sample_timeout_sec", float, 2.0,
       "how long a data read waits for a first sample", minimum=0.05, maximum=60.0),
    _s("data.pool_cap", int, 64, "raw topic subscriptions kept (LRU)", minimum=1, maximum=4096),
    _s("service_call_timeout_sec", float, 10.0, "budget of a service or action call",
       minimum=0.1, maximum=3600.0),
    _s("operations.max_in_flight_per_service", int, 8,
       "service or action requests in flight per remote endpoint (servers drop past ~10)",
       minimum=1, maximum=10),
    _s("parameter_service_timeout_sec", float, 2.0, "budget of a parameter service call",
       minimum=0.1, maximum=600.0),
    _s("parameter_negative_cache_sec", float, 60.0,
       "how long a node whose parameter services did not answer is skipped",
       minimum=0.0, maximum=3600.0),
    _s("logs.buffer_size", int, 200, "/rosout entries kept per node", minimum=1,
       maximum=100000),
    _s("sse.max_clients", int, 2, "concurrent SSE streams", minimum=1, maximum=10000),
    _s("sse.max_subscriptions", int, 100, "cyclic subscriptions", minimum=1, maximum=100000),
    _s("sse.max_duration_sec", int, 3600, "longest cyclic subscription", minimum=1,
       maximum=86400),
    _s("state_dir", str, "", "directory for persistent state (default: ~/.local/state/diag-gateway)"),
    # Fault manager (docs/faults.md). faults.diagnostics_bridge.code_map.<status name> is an
    # open key (OPEN_KEYS).
    _s("sse.keepalive_sec", float, 30.0, "seconds between keep-alive comments on SSE streams",
       minimum=0.05, maximum=3600.0),
    _s("faults.confirmation_threshold", int, -1,
       "debounce counter at or below which a fault confirms (must be < 0)",
       minimum=-1000000, maximum=-1, clamp=False),
    _s("faults.healing_enabled", bool, False, "PASSED reports can heal a confirmed fault"),
    _s("faults.healing_threshold", int, 3, "debounce counter at which a fault heals (>= 0)",
       minimum=0, maximum=1000000, clamp=False),
    _s("faults.critical_immediate_confirm", bool, True, "CRITICAL reports confirm at once"),
    _s("faults.auto_confirm_after_sec", float, 0.0,
       "confirm PREFAILED faults older than this (0: off)", minimum=0.0, maximum=31536000.0),
    _s("faults.dedup_retention_sec", float, 86400.0,
       "how long applied (reporter, seq) pairs are remembered", minimum=60.0,
       maximum=31536000.0),
    _s("faults.rosout_bridge.enabled", bool, True, "raise faults from /rosout WARN and above"),
    _s("faults.rosout_bridge.cooldown_sec", float, 5.0, "one /rosout report per code per period",
       minimum=0.0, maximum=3600.0),
    _s("faults.rosout_bridge.code_tags", bool, True,
       "a /rosout line opened by [CODE] reports CODE (off: LOG_<NODE>_<hash> for every line)"),
    _s("faults.diagnostics_bridge.enabled", bool, False, "raise faults from /diagnostics"),
    _s("faults.diagnostics_bridge.topic", str, "/diagnostics", "DiagnosticArray topic"),
    _s("faults.action_bridge.enabled", bool, True, "raise faults from aborted action goals"),
    _s("faults.action_bridge.report_canceled", bool, False,
       "canceled action goals count as faults too"),
    _s("snapshots.enabled", bool, True, "capture freeze frames when a fault confirms"),
    _s("snapshots.config_file", str, "", "YAML: fault_specific codes and regex patterns -> topics"),
    _s("snapshots.entity_default", bool, True,
       "fall back to the reporting node's own topics (at most 16)"),
    _s("snapshots.retain_on_clear", bool, False, "keep freeze frames when a fault is cleared"),
    _s("snapshots.timeout_sec", float, 1.0, "wait for a first sample per captured topic",
       minimum=0.01, maximum=60.0),
    _s("correlation.config_file", str, "", "YAML fault correlation rules (empty: off)"),
    # Push delivery: cyclic subscriptions, triggers, fault triggers (docs/push.md).
    _s("sse.client_queue_size", int, 256,
       "frames queued per push SSE client; a client this far behind is dropped",
       minimum=1, maximum=100000),
    _s("triggers.enabled", bool, True, "serve triggers (false: trigger routes answer 501)"),
    _s("triggers.max_triggers", int, 1000, "triggers kept at once (503 past it)",
       minimum=1, maximum=100000),
    _s("triggers.storage.path", str, "",
       "SQLite file of persistent triggers (default: triggers.db under state_dir)"),
    _s("triggers.on_restart_behavior", str, "reset",
       "restore: persistent triggers come back after a restart", choices=("reset", "restore")),
    _s("triggers.orphan_grace_sec", float, 10.0,
       "seconds an entity may be gone from discovery before its triggers and cyclic "
       "subscriptions end (only once it was seen)", minimum=0.0, maximum=86400.0),
    _s("fault_triggers.enabled", bool, True,
       "serve fault-trigger rules (false: their routes answer 501)"),
    _s("fault_triggers.poll_interval_ms", int, 1000,
       "how often a crossed rule reports its fault again", minimum=50, maximum=3600000),
    _s("fault_triggers.max_rules", int, 1000,
       "fault-trigger rules kept at once (more: 503; each costs CPU on every sample of its "
       "topic and every poll)", minimum=1, maximum=100000),
    _s("fault_triggers.storage.path", str, "",
       "JSON file keeping fault-trigger rules over restarts (empty: not kept)"),
    # Rosbag black box and bulk-data (docs/recorder.md).
    _s("snapshots.rosbag.enabled", bool, False,
       "keep a ring buffer of topics and write a rosbag when a fault confirms"),
    _s("snapshots.rosbag.duration_sec", float, 5.0, "seconds of messages kept before a fault",
       minimum=0.0, maximum=3600.0),
    _s("snapshots.rosbag.duration_after_sec", float, 1.0,
       "seconds recorded after a fault confirms (faults confirming meanwhile share the bag)",
       minimum=0.0, maximum=3600.0),
    _s("snapshots.rosbag.max_buffer_mb", int, 256, "ring buffer cap in MiB",
       minimum=1, maximum=65536),
    _s("snapshots.rosbag.max_bag_size_mb", int, 50,
       "largest recording in MiB (the oldest pre-fault messages are left out past it)",
       minimum=1, maximum=65536),
    _s("snapshots.rosbag.max_total_storage_mb", int, 500,
       "storage for all recordings in MiB (oldest deleted first)", minimum=1,
       maximum=10485760),
    _s("snapshots.rosbag.max_bags_per_fault", int, 1, "recordings kept per fault code",
       minimum=1, maximum=1000),
    _s("snapshots.rosbag.auto_cleanup", bool, True,
       "a cleared fault lets go of its recordings (deleted when no fault is left on them)"),
    _s("snapshots.rosbag.lazy_start", bool, False,
       "subscribe only once a fault is pending or confirmed (less CPU, less pre-fault data)"),
    _s("snapshots.rosbag.format", str, "mcap", "rosbag2 storage format",
       choices=("mcap", "sqlite3")),
    _s("snapshots.rosbag.compression", str, "none", "MCAP chunk compression",
       choices=("none", "lz4", "zstd")),
    _s("snapshots.rosbag.topic_selection", str, "node",
       "node: the faulting nodes' own topics; all: every topic; explicit: snapshots.rosbag.topics",
       choices=("node", "all", "explicit")),
    _s("snapshots.rosbag.topics", tuple, (), "topics recorded in explicit mode"),
    _s("snapshots.rosbag.include_topics", tuple, ("/tf",), "topics every recording adds"),
    _s("snapshots.rosbag.exclude_topics", tuple, (), "topics never recorded"),
    _s("snapshots.rosbag.storage_path", str, "",
       "directory of the recordings (default: <state_dir>/rosbags)"),
    _s("snapshots.rosbag.write_queue", int, 4,
       "recordings waiting for the writer thread (more are dropped, never waited for)",
       minimum=1, maximum=64),
    _s("bulk_data.max_upload_size", int, 104857600, "largest bulk-data upload in bytes (413)",
       minimum=1, maximum=1 << 40),
    _s("bulk_data.categories", tuple, (), "upload categories besides the read-only rosbags"),
    _s("bulk_data.storage_path", str, "",
       "directory of bulk-data uploads (default: <state_dir>/bulk_data)"),
    # Security: docs/security.md describes each of these.
    _s("auth.enabled", bool, False, "require tokens (see auth.require_auth_for)"),
    _s("auth.jwt_secret", str, "", "HS256 secret (32+ bytes), or RS256 private key file",
       secret=True),
    _s("auth.jwt_secret_file", str, "",
       "file holding auth.jwt_secret (keeps it off the command line; chmod 600)"),
    _s("auth.jwt_algorithm", str, "HS256", "token signature algorithm", choices=("HS256", "RS256")),
    _s("auth.jwt_public_key", str, "", "RS256 public key file (default: from the private key)"),
    _s("auth.token_expiry_seconds", int, 3600, "access token lifetime", minimum=10,
       maximum=604800),
    _s("auth.max_token_lifetime_seconds", int, 86400,
       "longest access token accepted (exp - iat; longer: 401) and issued (caps "
       "auth.token_expiry_seconds)", minimum=10, maximum=604800),
    _s("auth.refresh_token_expiry_seconds", int, 86400, "refresh token lifetime", minimum=60,
       maximum=31536000),
    _s("auth.require_auth_for", str, "write", "which requests need a token",
       choices=("none", "write", "all")),
    _s("auth.issuer", str, "diag-gateway", "token issuer (iss claim)"),
    _s("auth.clients", tuple, (), "client list, entries <client_id>:<client_secret>:<role>",
       secret=True),
    _s("auth.clients_file", str, "", "file holding auth.clients, one entry per line"),
    _s("cors.allowed_origins", tuple, (), "origins allowed cross-origin (empty: CORS off; * any)"),
    _s("cors.allowed_methods", tuple, ("GET", "PUT", "POST", "DELETE"),
       "methods a preflight may ask for"),
    _s("cors.allowed_headers", tuple,
       ("Authorization", "Content-Type", "X-Client-Id", "Range", "Last-Event-ID"),
       "request headers a preflight may ask for (X-<Vendor>-No-Fan-Out is always added)"),
    _s("cors.allow_credentials", bool, False, "let browsers send credentials cross-origin"),
    _s("cors.max_age_seconds", int, 600, "how long a browser may cache a preflight answer",
       minimum=0, maximum=86400),
    _s("rate_limiting.enabled", bool, False, "answer 429 past the request rates below"),
    _s("rate_limiting.global_requests_per_minute", int, 600, "all clients together",
       minimum=1, maximum=10000000),
    _s("rate_limiting.client_requests_per_minute", int, 60,
       "one client (token subject, else remote address)", minimum=1, maximum=10000000),
    _s("rate_limiting.endpoint_limits", tuple, (),
       "per client and endpoint, entries [METHOD ]<path glob>:<requests per minute>"),
    _s("rate_limiting.max_tracked_clients", int, 10000, "client buckets kept (oldest dropped)",
       minimum=100, maximum=1000000),
    # Aggregation (docs/federation.md). Budgets: the spec's range 100-600000 ms, clamped.
    _s("aggregation.enabled", bool, False, "merge peer gateways into this one (fleet view)"),
    _s("aggregation.timeout_ms", int, 2000,
       "connect budget of every peer call; read budget of peer metadata and fan-out "
       "(health probes use min(this, 800), more on a slow link, at most 4000)",
       minimum=100, maximum=600000),
    _s("aggregation.forward_timeout_ms", int, 15000,
       "read budget of forwarded requests (raised to timeout_ms when lower)",
       minimum=100, maximum=600000),
    _s("aggregation.write_timeout_ms", int, 5000, "budget for pushing a request body to a peer",
       minimum=100, maximum=600000),
    _s("aggregation.peer_urls", tuple, (), "base URLs of static peers (parallel to peer_names)"),
    _s("aggregation.peer_names", tuple, (), "unique names of static peers (parallel to peer_urls)"),
    _s("aggregation.announce", bool, False, "announce this gateway by mDNS"),
    _s("aggregation.discover", bool, False, "add gateways found by mDNS as peers"),
    _s("aggregation.mdns_service", str, "_diag-gateway._tcp.local.",
       "mDNS service type shared by the gateways of one cluster"),
    _s("aggregation.mdns_name", str, "", "unique mDNS instance name (default: the host name)"),
    _s("aggregation.mdns_interfaces", tuple, ("127.0.0.1",),
       "addresses or interface names mDNS uses ('all': every interface)"),
    _s("aggregation.announce_port", int, 0,
       "port announced by mDNS when peers reach this gateway through a proxy or relay "
       "(0: server.port)", minimum=0, maximum=65535),
    _s("aggregation.max_discovered_peers", int, 50, "peers accepted from mDNS",
       minimum=1, maximum=1000),
    _s("aggregation.max_discovered_per_address", int, 16,
       "peers accepted from mDNS announced at one host address", minimum=1, maximum=1000),
    _s("aggregation.health_interval_ms", int, 500,
       "period of each peer's health probe while online (offline: backoff up to 2 s)",
       minimum=100, maximum=600000),
    _s("aggregation.refresh_interval_ms", int, 1000,
       "period of each peer's entity refresh (one conditional request)",
       minimum=100, maximum=600000),
    _s("aggregation.connect_to", str, "",
       "a robot the primary cannot reach (NAT, cellular): the primary's base URL to connect "
       "out to and keep a tunnel open (empty: off)"),
    _s("aggregation.connect_token", str, "",
       "the primary's shared connect secret: turns robot connections on; a robot presenting it "
       "(or a token older primaries derived from it) is accepted only while "
       "aggregation.connect_accept_shared holds, and names no robot (empty on a primary "
       "without connect_robots: none accepted)", secret=True),
    _s("aggregation.connect_token_file", str, "", "file holding aggregation.connect_token"),
    # Robot identity over connect-out (docs/security.md, "Connect-in identity and tunnels").
    _s("aggregation.connect_robot_secret", str, "",
       "a primary's key for issuing robots' own connect tokens, HMAC-SHA256(key, name) "
       "(16+ characters, not connect_token; empty: a random key made once in "
       "<state_dir>/federation/connect_robot_key); print a token with "
       "diag-gateway robot-token NAME", secret=True),
    _s("aggregation.connect_robot_secret_file", str, "",
       "file holding aggregation.connect_robot_secret"),
    _s("aggregation.connect_robot_token", str, "",
       "a robot's own connect token, presented instead of aggregation.connect_token: its "
       "entry in the primary's connect_robots, or the token the primary issues it "
       "(diag-gateway robot-token NAME on the primary)", secret=True),
    _s("aggregation.connect_robot_token_file", str, "",
       "file holding aggregation.connect_robot_token"),
    _s("aggregation.connect_robots", tuple, (),
       "a primary's robots with tokens of their own, entries <robot name>:<token> (16+ "
       "characters); a listed robot must present its own", secret=True),
    _s("aggregation.connect_robots_file", str, "",
       "file holding aggregation.connect_robots, one entry per line"),
    _s("aggregation.connect_accept_shared", bool, True,
       "a primary also accepts robots presenting aggregation.connect_token itself (older "
       "robots): such a connection proves no name, takes only a free name (never one a "
       "connected robot holds or one held offline after proving its name), and a warning is "
       "logged; false: each robot must present its own token"),
    _s("aggregation.max_connected_robots", int, 1000,
       "robots connected out to this primary at once (more: 503)", minimum=1,
       maximum=100000),
    _s("aggregation.connect_hold_ms", int, 3600000,
       "a robot connected out whose tunnel closed stays listed as an offline peer (its last "
       "entities, apps is_online false) until it reconnects or this long (0: removed at once)",
       minimum=0, maximum=7 * 24 * 3600 * 1000),
    _s("aggregation.connect_attempts_per_minute", int, 60,
       "robot connect attempts per source address and minute (more: 429 with Retry-After)",
       minimum=1, maximum=100000),
    _s("aggregation.reexport", bool, False,
       "a site primary under a fleet primary: its entity declaration holds its peers' "
       "entities too and calls marked no-fan-out still reach its peers (docs/federation.md, "
       "Sites)"),
    _s("aggregation.beacon", bool, True,
       "an online peer's liveness and entity ETag come from one stream it writes a line to "
       "every health_interval_ms (a /health probe still every 10 s); false: a /health probe "
       "every interval and a conditional refresh every refresh_interval_ms"),
    _s("aggregation.max_response_bytes", int, 16 * 1024 * 1024,
       "largest peer answer read for a merge (larger: too-large)",
       minimum=1024, maximum=1 << 30),
    _s("aggregation.forward_auth", bool, False, "forward the caller's Authorization to peers"),
    _s("aggregation.peer_auth_header", str, "",
       "Authorization value for the gateway's own peer calls (never to mDNS-found peers)",
       secret=True),
    _s("aggregation.peer_auth_header_file", str, "",
       "file holding aggregation.peer_auth_header"),
    _s("aggregation.require_tls", bool, False, "refuse http:// peers"),
    _s("aggregation.peer_scheme", str, "http", "scheme of mDNS-found peers",
       choices=("http", "https")),
    _s("aggregation.fleet_secret", str, "",
       "the fleet's shared secret: a gateway holding it answers proof challenges, and a "
       "primary holding it uses a peer found by mDNS only once the peer proved it at its "
       "announced address (empty: mDNS peers are used unproved)", secret=True),
    _s("aggregation.fleet_secret_file", str, "", "file holding aggregation.fleet_secret"),
    # Locks, scripts and lifecycle control (docs/control.md).
    _s("locking.enabled", bool, True, "lock manager and lock routes (off: 501, no write guarded)"),
    _s("locking.default_max_expiration", int, 3600,
       "longest lock in seconds (longer requests are capped)", minimum=1, maximum=31536000),
    _s("locking.cleanup_interval", float, 30.0, "seconds between sweeps of expired locks",
       minimum=0.05, maximum=86400.0),
    _s("locking.defaults.components.lock_required_scopes", tuple, (),
       "collections a component write may change only under the writer's own lock"),
    _s("locking.defaults.apps.lock_required_scopes", tuple, (),
       "collections an app write may change only under the writer's own lock"),
    _s("locking.defaults.components.breakable", bool, True,
       "another client may replace a component lock with break_lock"),
    _s("locking.defaults.apps.breakable", bool, True,
       "another client may replace an app lock with break_lock"),
    _s("scripts.scripts_dir", str, "",
       "directory of managed scripts (.sh, .bash, .py; empty: scripts off, 501)"),
    _s("scripts.allow_uploads", bool, True, "accept script uploads (false: 400)"),
    _s("scripts.allow_anonymous", bool, False,
       "with auth off (or auth.require_auth_for=none) still accept script uploads and runs "
       "from anyone (false: 403); on: a warning at start"),
    _s("scripts.run_as_user", str, "",
       "run scripts as this user (name or uid; the gateway must be root); empty: as the gateway"),
    _s("scripts.allow_root", bool, False,
       "with scripts on, a gateway running as root and no scripts.run_as_user starts only when "
       "this is true (scripts then run as root and can read the gateway's secrets)"),
    _s("scripts.upload_dir", str, "", "directory of uploaded scripts (default: <state_dir>/scripts)"),
    _s("scripts.max_file_size_mb", int, 10, "largest script upload in MiB (413)",
       minimum=1, maximum=1024),
    _s("scripts.max_concurrent_executions", int, 5, "script runs at once (more: 429)",
       minimum=1, maximum=1000),
    _s("scripts.default_timeout_sec", int, 300, "a run past this is killed (terminated)",
       minimum=1, maximum=604800),
    _s("scripts.max_execution_history", int, 100,
       "execution records kept (oldest finished evicted first)", minimum=1, maximum=100000),
    _s("scripts.stop_grace_sec", float, 5.0,
       "a stopped run (SIGTERM) still alive after this is killed with all its processes",
       minimum=0.1, maximum=3600.0),
    _s("scripts.max_output_bytes", int, 1048576,
       "stdout and stderr kept per run, each (the rest is dropped and flagged)",
       minimum=1024, maximum=1 << 30),
    # Plugins and software updates (docs/plugins.md). plugins.<name>.* keys are open: each
    # plugin receives its own as its configuration.
    _s("plugins", tuple, (), "plugins to load, by entry point name (group diag_gateway.plugins)"),
    _s("plugin_call_timeout_sec", float, 5.0,
       "budget of one plugin call; a plugin that hangs costs its caller a 504",
       minimum=0.05, maximum=600.0),
    _s("updates.enabled", bool, True,
       "serve /updates through the update provider plugin (none loaded: 501)"),
    _s("updates.operation_timeout_sec", float, 3600.0,
       "budget of one prepare or execute step of the update provider",
       minimum=1.0, maximum=86400.0),
    # Dashboard (docs/dashboard.md): the web page served at /.
    _s("dashboard.enabled", bool, True, "serve the built-in web dashboard at / (API unchanged)"),
    # MCP server (docs/mcp.md): /mcp on the API's port; the SDK loads on the first request.
    _s("mcp.enabled", bool, True, "serve the Model Context Protocol server at /mcp"),
    _s("mcp.page_size", int, 50, "most items one MCP tool answer lists (then paginated)",
       minimum=1, maximum=500),
    _s("mcp.request_timeout_sec", float, 60.0,
       "budget of the REST request behind one MCP tool call", minimum=1.0, maximum=3600.0),
    # Performance (docs/performance.md, "Service calls"): executor of the service/action client
    # node; merged reads from cached peer answers (docs/federation.md, "Read cache").
    _s("ros.executor", str, "events",
       "rclpy executor of the service and action client node: events (EventsExecutor) or "
       "single (SingleThreadedExecutor, on the bridge's one node)", choices=("events", "single")),
    _s("ros.service_replies", str, "loop",
       "who takes service responses: loop (the event loop, woken through an eventfd by the "
       "middleware; falls back to the executor where rcl lacks the hook) or executor",
       choices=("loop", "executor")),
    _s("ros.service_client_idle_sec", float, 120.0,
       "close a service client no call used for this long (0: keep every client): each "
       "response of a service reaches every client of it, so a kept client costs the gateway "
       "CPU for other nodes' calls; the next call makes a new one, which waits for the match",
       minimum=0.0, maximum=86400.0),
    _s("aggregation.cache.enabled", bool, False,
       "serve merged collection reads from peers' cached answers, dropped on their change "
       "events (fault stream relay, entity ETags, health)"),
    _s("aggregation.cache.max_age_ms", int, 10000,
       "oldest cached peer answer a merged read may use (its x-vendor cache block says so)",
       minimum=100, maximum=600000),
    # Hardening (docs/hardening.md): bounded stop, client log flooding, open keys declared.
    _s("server.shutdown_grace_sec", float, 5.0,
       "on SIGINT/SIGTERM, how long calls in flight may finish before they are answered 503 "
       "(a second signal stops at once; keep well inside the service manager's stop timeout)",
       minimum=0.0, maximum=300.0),
    _s("server.client_error_log_per_minute", int, 10,
       "WARNING lines logged per client and minute about malformed requests (more: dropped)",
       minimum=0, maximum=100000),
    _s("server.max_json_body_bytes", int, 1 << 20,
       "largest request body of a JSON route, whatever its content type (larger: 413)",
       minimum=1024, maximum=16 << 20),
    _s("snapshots.default_topics", tuple, (),
       "topics captured for every confirmed fault (overrides the config file's default_topics)"),
    # Event loop under storms (docs/performance.md, "The event loop"): scheduler latency hint.
    _s("server.loop_slice_us", int, 100,
       "scheduler slice asked for the event-loop thread (Linux 6.12+ EEVDF): a short slice "
       "lets the loop run soon after it wakes on a busy machine, with no more CPU; 0: kernel "
       "default", minimum=0, maximum=100000),
    # Event loop (docs/performance.md, "The event loop"): process/eventloop.py.
    _s("server.event_loop", str, "auto",
       "event loop: uvloop (its wake runs in C: less CPU per request, most of all after "
       "sleep), asyncio, or auto (uvloop when installed)", choices=("auto", "uvloop", "asyncio")),
    # Hot answers on the wire (docs/performance.md): hotwire.py reads aiohttp internals.
    _s("server.hot_wire", bool, True,
       "answer a hot GET from its request bytes before aiohttp parses it (checked against "
       "aiohttp's RequestHandler at start; off by itself on an aiohttp it does not know); "
       "false: hot answers still skip routing and the handler, after aiohttp's parse"),
    # Garbage collector (docs/performance.md, "The event loop"): no full-heap pauses in storms.
    _s("server.gc_freeze", bool, True,
       "once started, move the startup heap out of the garbage collector's full collections "
       "(each would stop the event loop for tens of milliseconds)"),
    _s("server.gc_young_threshold", int, 10000,
       "allocations between young garbage collections (Python's default: 700); higher: "
       "fewer transient objects of a burst promoted to the old generation; 0: keep",
       minimum=0, maximum=1000000),
    # Memory (docs/performance.md, "Start and memory"): glibc malloc arenas, capped before threads start.
    _s("server.malloc_arenas", int, 1,
       "most glibc malloc arenas the process uses (set at start, before any thread): one "
       "arena per busy thread holds more memory; 0: glibc's default (8 per core)",
       minimum=0, maximum=1024),
)

# Discovery parameters removed from the interface: warned about and ignored.
REMOVED = frozenset(
    "discovery." + k
    for k in (
        "create_synthetic_areas",
        "create_synthetic_components",
        "grouping_strategy",
        "synthetic_component_name_pattern",
        "topic_only_policy",
        "min_topics_for_component",
        "allow_heuristic_areas",
        "allow_heuristic_components",
    )
)

# Open-ended keys that are maps by design: (pattern, feature that must be built or None).
# `<name>` is one dotted segment, a trailing `.*` any number of them.
OPEN_KEYS: tuple[tuple[str, str | None], ...] = (
    ("faults.diagnostics_bridge.code_map.<name>", None),  # DiagnosticStatus name -> code
    ("plugins.<name>.*", "plugins"),  # each plugin's own configuration object
    ("discovery.merge_pipeline.layers.<layer>.<group>", None),  # = policy (docs/manifest.md)
)
