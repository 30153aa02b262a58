import Foundation
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
