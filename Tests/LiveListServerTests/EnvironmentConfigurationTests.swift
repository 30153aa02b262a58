import Foundation
import LiveListEngine
@testable import LiveListServer
import Testing

@Suite struct EnvironmentConfigurationTests {
    @Test func theAccessRecheckIntervalComesFromTheEnvironmentInRange() throws {
        #expect(try ServerConfiguration.fromEnvironment([:]).accessRecheckInterval == .seconds(60))
        #expect(try ServerConfiguration.fromEnvironment(["LIVELIST_ACCESS_RECHECK": "5"]).accessRecheckInterval == .seconds(5))
        #expect(try ServerConfiguration.fromEnvironment(["LIVELIST_ACCESS_RECHECK": "1.5"]).accessRecheckInterval == .milliseconds(1500))
        for refused in ["0", "0.5", "-3", "86401", "nan", "inf", "soon"] {
            #expect(throws: StartupError.self, "\(refused)") { try ServerConfiguration.fromEnvironment(["LIVELIST_ACCESS_RECHECK": refused]) }
        }
    }

    @Test func theSettingsThatSizeANodeComeFromTheEnvironmentInRange() async throws {
        let standard = try ServerConfiguration.fromEnvironment([:])
        #expect(standard.lists.fanOutSlice == 1_000 && standard.streamSendBufferBytes == 64 << 10 && standard.streamOutputBudgetBytes == 256 << 20)
        let sized = try ServerConfiguration.fromEnvironment([
            "LIVELIST_FAN_OUT_SLICE": "250", "LIVELIST_STREAM_SEND_BUFFER": "0", "LIVELIST_STREAM_OUTPUT_BUDGET": "\(32 << 20)",
        ])
        #expect(sized.lists.fanOutSlice == 250 && sized.streamSendBufferBytes == 0 && sized.streamOutputBudgetBytes == 32 << 20)
        let refusals = [("LIVELIST_FAN_OUT_SLICE", ["0", "-1", "1000001", "many"]), ("LIVELIST_STREAM_SEND_BUFFER", ["100", "-1", "67108865", "64k"]),
                        ("LIVELIST_STREAM_OUTPUT_BUDGET", ["0", "1048575", "big"])]
        for (name, texts) in refusals {
            for text in texts {
                #expect(throws: StartupError.self, "\(name)=\(text)") { try ServerConfiguration.fromEnvironment([name: text]) }
            }
        }
        // The HTTP server gets what the configuration says.
        let app = try await LiveListApp(configuration: sized, store: MemoryListStore())
        #expect(app.httpConfiguration.streamSendBuffer == 0 && app.httpConfiguration.streamOutputBudget == 32 << 20)
    }

    @Test func anAppConfiguredFromTheEnvironmentLogsItsFailures() throws {
        #expect(try ServerConfiguration.fromEnvironment([:]).errorLog != nil)
    }

    @Test func tokensComeFromFilesAsDockerSecretsAreMountedNeverFromTwoSources() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("livelist-tokens-\(UInt32.random(in: 0 ... .max))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("token").path
        try Data("from-a-file\r\n".utf8).write(to: URL(fileURLWithPath: file))
        for name in ["LIVELIST_WRITE_TOKEN", "LIVELIST_READ_TOKEN", "LIVELIST_METRICS_TOKEN"] {
            let configuration = try ServerConfiguration.fromEnvironment([name + "_FILE": file])
            #expect([configuration.writeToken, configuration.readToken, configuration.metricsToken].compactMap { $0 } == ["from-a-file"], "\(name)")
            #expect(throws: StartupError.self, "\(name) twice") { try ServerConfiguration.fromEnvironment([name: "direct", name + "_FILE": file]) }
            #expect(throws: StartupError.self, "\(name) missing") { try ServerConfiguration.fromEnvironment([name + "_FILE": file + ".missing"]) }
        }
        let empty = folder.appendingPathComponent("empty").path
        try Data().write(to: URL(fileURLWithPath: empty))
        #expect(throws: StartupError.self) { try ServerConfiguration.fromEnvironment(["LIVELIST_READ_TOKEN_FILE": empty]) }
    }

    @Test func sessionSecretsComeFromAFileOrTheEnvironmentTheFirstSigning() throws {
        let (new, old) = (String(repeating: "ab", count: 32), String(repeating: "01", count: 40))
        let fromEnvironment = try ServerConfiguration.fromEnvironment(["LIVELIST_SESSION_SECRETS": "\(new),\(old)"]).sessionSecrets
        #expect(fromEnvironment == [Array(repeating: 0xAB, count: 32), Array(repeating: 0x01, count: 40)])
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("livelist-secrets-\(UInt32.random(in: 0 ... .max))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("secrets").path
        try Data("# signs\n\(new)\n\n# verifies until 2026-12-01\n\(old)\n".utf8).write(to: URL(fileURLWithPath: file))
        #expect(try ServerConfiguration.fromEnvironment(["LIVELIST_SESSION_SECRETS_FILE": file]).sessionSecrets == fromEnvironment)
        #expect(try ServerConfiguration.fromEnvironment([:]).sessionSecrets == nil)
        for refused in [String(repeating: "ab", count: 31), "xyz" + String(repeating: "a", count: 61), String(repeating: "a", count: 65), "#only a comment"] {
            #expect(throws: StartupError.self, "\(refused)") { try ServerConfiguration.fromEnvironment(["LIVELIST_SESSION_SECRETS": refused]) }
        }
        #expect(throws: StartupError.self) { try ServerConfiguration.fromEnvironment(["LIVELIST_SESSION_SECRETS": new, "LIVELIST_SESSION_SECRETS_FILE": file]) }
    }
}
