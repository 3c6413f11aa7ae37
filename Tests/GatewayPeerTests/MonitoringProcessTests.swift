import Foundation
import PeerTestSupport
import SIPMessages
import Testing

/// What operators load beside the gateway (README, "Metrics"): deploy/prometheus's alert rules
/// pass `promtool check rules` and their own `promtool test rules` unit tests; the built
/// `presence-gateway`, bridging a pair each way between sipp peers with its SQLite store, exports
/// a `/metrics` that `promtool check metrics` finds valid and lint-free; and every metric name the
/// rules and the Grafana dashboard (deploy/grafana) use is one it exports.
@Suite(.serialized) struct MonitoringProcessTests {
    static let deploy = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("deploy")
    static let rules = deploy.appendingPathComponent("prometheus/presence-gateway.rules.yml").path
    static let ruleTests = deploy.appendingPathComponent("prometheus/presence-gateway.rules.test.yml").path
    static let dashboard = deploy.appendingPathComponent("grafana/presence-gateway.json").path

    static func promtool() throws -> String {
        try #require(
            ["/usr/bin/promtool", "/usr/local/bin/promtool"].first { FileManager.default.isExecutableFile(atPath: $0) },
            "promtool is missing: scripts/setup.sh installs the prometheus package")
    }

    @Test func alertRulesPassPromtoolAndTheirUnitTests() async throws {
        let promtool = try Self.promtool()
        let check = try await runProgram(promtool, ["check", "rules", Self.rules])
        #expect(check.status == 0, "\(check.output)")
        #expect(check.output.contains("SUCCESS: 7 rules found"), "\(check.output)")
        let test = try await runProgram(promtool, ["test", "rules", Self.ruleTests])
        #expect(test.status == 0, "\(test.output)")
        #expect(test.output.contains("SUCCESS"), "\(test.output)")
        // Every alert of the rules has a unit test.
        let alerts = Self.matches(#"alert: (\w+)"#, in: try String(contentsOfFile: Self.rules, encoding: .utf8))
        let tested = Set(Self.matches(#"alertname: (\w+)"#, in: try String(contentsOfFile: Self.ruleTests, encoding: .utf8)))
        #expect(alerts.count == 7)
        #expect(Set(alerts) == tested)
    }

    /// The metric names in `text`: the gateway's own (`gateway_`, `sip_`) PromQL identifiers.
    static func metricNames(_ text: String) -> Set<String> {
        Set(matches(#"\b((?:gateway|sip)_[a-z_]+)\b"#, in: text))
    }

    /// Every first capture group of `pattern` in `text`.
    static func matches(_ pattern: String, in text: String) -> [String] {
        guard let regex = try? NSRegularExpression(pattern: pattern) else { return [] }
        let range = NSRange(text.startIndex..., in: text)
        return regex.matches(in: text, range: range).compactMap { Range($0.range(at: 1), in: text).map { String(text[$0]) } }
    }

    /// The PromQL of the dashboard: every panel target's `expr` and every templating query.
    static func dashboardQueries() throws -> [String] {
        let data = try Data(contentsOf: URL(fileURLWithPath: dashboard))
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let panels = try #require(json["panels"] as? [[String: Any]])
        var queries = panels.flatMap { ($0["targets"] as? [[String: Any]] ?? []).compactMap { $0["expr"] as? String } }
        let variables = (json["templating"] as? [String: Any])?["list"] as? [[String: Any]] ?? []
        queries += variables.compactMap { ($0["query"] as? [String: Any])?["query"] as? String }
        #expect(panels.allSatisfy { ($0["targets"] as? [Any])?.isEmpty == false }, "a panel without a query")
        return queries
    }

    /// The dashboard's panel queries are PromQL Prometheus parses: each, with Grafana's variables
    /// given values, as a recording rule that `promtool check rules` reads. (`label_values(...)`,
    /// the instance variable's query, is Grafana's, not PromQL.)
    @Test func dashboardQueriesParseAsPromQL() async throws {
        let promtool = try Self.promtool()
        let queries = try Self.dashboardQueries().filter { !$0.hasPrefix("label_values(") }
        #expect(queries.count >= 19)
        let rules = queries.enumerated().map { n, query in
            let expr = query.replacingOccurrences(of: "$__rate_interval", with: "5m")
                .replacingOccurrences(of: "$instance", with: ".*")
            return "      - record: dashboard_query_\(n)\n        expr: '\(expr.replacingOccurrences(of: "'", with: "''"))'"
        }
        let file = NSTemporaryDirectory() + "dashboard-\(UInt64.random(in: 0...UInt64.max)).rules.yml"
        try ("groups:\n  - name: dashboard\n    rules:\n" + rules.joined(separator: "\n") + "\n")
            .write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        let check = try await runProgram(promtool, ["check", "rules", file])
        #expect(check.status == 0, "\(check.output)")
        #expect(check.output.contains("SUCCESS: \(queries.count) rules found"), "\(check.output)")
    }

    @Test func theRunningGatewaysMetricsAreValidAndHoldEveryNameTheRulesAndDashboardUse() async throws {
        let promtool = try Self.promtool()
        let binary = try #require(GatewayBinary.path, "presence-gateway was not built next to the tests")
        let directory = NSTemporaryDirectory() + "monitoring-\(UInt64.random(in: 0...UInt64.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let omaServer = try await Sipp.start(scenario: PeerAssets.scenario("durable-oma-server.xml"), remote: nil, timeLimit: 60)
        let edge = try await Sipp.start(scenario: PeerAssets.scenario("durable-enterprise-edge.xml"), remote: nil, timeLimit: 60)
        defer {
            _ = omaServer.stop()
            _ = edge.stop()
        }
        let ports = (oma: try LoopbackPorts.free(), enterprise: try LoopbackPorts.free(), admin: try LoopbackPorts.free())
        let configuration = directory + "/gateway.yaml"
        try DurableStateProcessTests.Gateway.yaml(
            listen: ports, enterprise: ("enterprise-edge", edge.port), oma: ("oma-server", omaServer.port),
            state: "{ store: sqlite, path: state/gateway.db }"
        ).write(toFile: configuration, atomically: true, encoding: .utf8)
        let gateway = DurableStateProcessTests.Gateway(
            binary: binary, configuration: configuration, directory: directory, admin: ports.admin)
        let process = try await gateway.start()
        defer { process.kill() }
        let enterpriseWatcher = try await Sipp.start(
            scenario: PeerAssets.scenario("durable-enterprise-watcher.xml"), remote: "127.0.0.1:\(ports.enterprise)",
            keys: ["watcher": "sip:carol@contoso.com", "resource": "sip:john@oma.example"], timeLimit: 60)
        let omaWatcher = try await Sipp.start(
            scenario: PeerAssets.scenario("durable-oma-watcher.xml"), remote: "127.0.0.1:\(ports.oma)",
            keys: ["watcher": "sip:dave@oma.example", "resource": "sip:bob@contoso.com"], timeLimit: 60)
        defer {
            _ = enterpriseWatcher.stop()
            _ = omaWatcher.stop()
        }
        try await gateway.waitForPairs()
        // A request from an address that is no configured peer, for a domain neither side serves.
        let stranger = try LoopbackDatagramPeer(host: "127.0.0.2")
        stranger.send("""
            SUBSCRIBE sip:x@elsewhere.example SIP/2.0
            Via: SIP/2.0/UDP \(stranger.hostPort);branch=z9hG4bKmon1;rport
            Max-Forwards: 70
            From: <sip:eve@elsewhere.example>;tag=mon1
            To: <sip:x@elsewhere.example>
            Call-ID: mon1@elsewhere
            CSeq: 1 SUBSCRIBE
            Contact: <sip:eve@\(stranger.hostPort)>
            Event: presence

            """, to: ports.oma)
        let refused = try #require(await stranger.first(within: 5) { ($0.response?.statusCode ?? 0) >= 200 }?.response)
        #expect(refused.statusCode >= 400)

        let text = try await gateway.get("/metrics")
        let exposition = directory + "/metrics.txt"
        try text.write(toFile: exposition, atomically: true, encoding: .utf8)
        let lint = try await runProgram("/bin/sh", ["-c", "\"$0\" check metrics < \"$1\"", promtool, exposition])
        #expect(lint.status == 0 && lint.output.isEmpty, "promtool check metrics: \(lint.output)")

        var samples: [String: Double] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            samples[String(line[..<space])] = value
        }
        let exported = Set(samples.keys.map { String($0.prefix { $0 != "{" }) })
        /// A gauge's value on every shard: a gateway of several shards (one per core by default)
        /// labels each shard's gauge `shard` (docs/shards.md, "Running several").
        func everyShard(_ series: String) -> [Double] {
            samples.filter { key, _ in
                key.replacing(/,?shard="\d+"/, with: "").replacing("{}", with: "") == series
            }.map(\.value)
        }
        let ruleNames = Self.metricNames(try String(contentsOfFile: Self.rules, encoding: .utf8))
        let dashboardNames = Self.metricNames(try Self.dashboardQueries().joined(separator: "\n"))
        #expect(ruleNames.count >= 7)
        #expect(dashboardNames.count >= 14)
        #expect(ruleNames.subtracting(exported).isEmpty, "the rules name \(ruleNames.subtracting(exported).sorted())")
        #expect(dashboardNames.subtracting(exported).isEmpty, "the dashboard names \(dashboardNames.subtracting(exported).sorted())")

        // Each side's transport is counted apart; the pairs' requests and answers by peer.
        #expect(samples[#"sip_transport_messages_received_total{side="oma",transport="udp"}"#] ?? 0 > 0)
        #expect(samples[#"sip_transport_messages_received_total{side="enterprise",transport="udp"}"#] ?? 0 > 0)
        #expect(samples[#"gateway_requests_received_total{side="oma",peer="oma-server"}"#] ?? 0 >= 1)
        #expect(samples[#"gateway_requests_received_total{side="enterprise",peer="enterprise-edge"}"#] ?? 0 >= 1)
        #expect(samples[#"gateway_responses_received_total{side="enterprise",peer="enterprise-edge",class="2xx"}"#] ?? 0 >= 1)
        #expect(samples[#"gateway_responses_received_total{side="oma",peer="oma-server",class="2xx"}"#] ?? 0 >= 1)
        for up in [#"gateway_peer_up{side="enterprise",peer="enterprise-edge"}"#, #"gateway_peer_up{side="oma",peer="oma-server"}"#] {
            #expect(!everyShard(up).isEmpty && everyShard(up).allSatisfy { $0 == 1 }, "\(up): \(everyShard(up))")
        }
        #expect(samples[#"gateway_requests_rejected_total{side="oma",peer="other"}"#] == 1)
        #expect(samples["gateway_responses_sent_total{side=\"oma\",peer=\"other\",class=\"\(refused.statusCode / 100)xx\"}"] == 1)
        #expect(!everyShard("gateway_state_store_up").isEmpty && everyShard("gateway_state_store_up").allSatisfy { $0 == 1 })
        // The SUBSCRIBEs the gateway sent were timed: cumulative buckets up to +Inf = count.
        let subscribe = #"gateway_sip_response_seconds_bucket{side="oma",method="SUBSCRIBE",le="#
        let buckets = samples.filter { $0.key.hasPrefix(subscribe) }
        #expect(buckets.count == 16)
        let count = samples[#"gateway_sip_response_seconds_count{side="oma",method="SUBSCRIBE"}"#] ?? 0
        #expect(count >= 1)
        #expect(buckets[subscribe + #""+Inf"}"#] == count)
    }
}
