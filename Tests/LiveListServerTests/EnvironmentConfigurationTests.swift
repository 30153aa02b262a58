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
}
