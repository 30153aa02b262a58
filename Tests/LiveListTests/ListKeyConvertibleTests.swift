#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import LiveList
import Testing

@Suite struct ListKeyConvertibleTests {
    @Test func stringIsItsOwnKey() {
        #expect("todo".listKey == "todo")
        #expect("".listKey == "")
        #expect("a b\tc\nd".listKey == "a b\tc\nd")
    }

    @Test func unicodeStringsAreTheirOwnKeys() {
        #expect("héllo".listKey == "héllo")
        #expect("👋🏽".listKey == "👋🏽")
        #expect("日本語".listKey == "日本語")
        #expect("<a href=\"x\">&'</a>".listKey == "<a href=\"x\">&'</a>")
    }

    @Test func substringIsItsOwnKey() {
        let text = "team/vincent"
        let login = text.split(separator: "/")[1]
        #expect(login.listKey == "vincent")
    }

    @Test func integersAreTheirDecimalDigits() {
        #expect(0.listKey == "0")
        #expect(42.listKey == "42")
        #expect((-42).listKey == "-42")
        #expect(Int.max.listKey == "9223372036854775807")
        #expect(Int.min.listKey == "-9223372036854775808")
        #expect(Int8.min.listKey == "-128")
        #expect(Int16(-32768).listKey == "-32768")
        #expect(Int32.min.listKey == "-2147483648")
        #expect(Int64(-7).listKey == "-7")
        #expect(UInt8.max.listKey == "255")
        #expect(UInt16.max.listKey == "65535")
        #expect(UInt32.max.listKey == "4294967295")
        #expect(UInt64.max.listKey == "18446744073709551615")
        #expect(UInt(1_000_000).listKey == "1000000")
    }

    @Test func integersOfDifferentTypesWithTheSameValueShareTheirKey() {
        #expect(Int8(7).listKey == UInt64(7).listKey)
        #expect(Int(-1).listKey == Int16(-1).listKey)
    }

    @available(macOS 15.0, iOS 18.0, watchOS 11.0, tvOS 18.0, visionOS 2.0, *)
    @Test func wideIntegersAreTheirDecimalDigits() {
        #expect(Int128.min.listKey == "-170141183460469231731687303715884105728")
        #expect(UInt128.max.listKey == "340282366920938463463374607431768211455")
    }

    @Test func booleansAreTrueAndFalse() {
        #expect(true.listKey == "true")
        #expect(false.listKey == "false")
    }

    @Test func uuidIsItsLowercaseString() throws {
        let id = try #require(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F"))
        #expect(id.listKey == "e621e1f8-c36c-495a-93fc-0c247a3e6e5f")
    }

    @Test func uuidKeyIsStableForEqualValues() throws {
        let upper = try #require(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F"))
        let lower = try #require(UUID(uuidString: "e621e1f8-c36c-495a-93fc-0c247a3e6e5f"))
        #expect(upper.listKey == lower.listKey)
        #expect(UUID().listKey.count == 36)
    }

    @Test func rawRepresentableIsItsRawValue() {
        #expect(Tab.inbox.listKey == "inbox")
        #expect(Tab.archive.listKey == "archive")
    }

    @Test func customTypeSaysHow() {
        #expect(MemberID(team: "blue", login: "mia").listKey == "blue/mia")
    }
}
