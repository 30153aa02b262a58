import LiveListPostgres
import Testing

@Suite struct DatabaseURLTests {
    @Test func readsEveryPartAndDecodesEscapes() throws {
        let url = try DatabaseURL("postgres://live%40list:p%3Ass@db.internal:6543/my%20lists?sslmode=disable")
        #expect(url.host == "db.internal")
        #expect(url.port == 6543)
        #expect(url.user == "live@list")
        #expect(url.password == "p:ss")
        #expect(url.database == "my lists")
    }

    @Test func defaultsThePortAndTakesIPv6Hosts() throws {
        let url = try DatabaseURL("postgresql://livelist@[::1]/livelist")
        #expect(url.host == "::1")
        #expect(url.port == 5432)
        #expect(url.password == nil)
        #expect(url.description == "postgres://livelist@[::1]:5432/livelist")
    }

    @Test func theDescriptionNeverShowsThePassword() throws {
        let url = try DatabaseURL("postgres://livelist:hunter2@127.0.0.1:5432/livelist")
        #expect(!url.description.contains("hunter2"))
    }

    @Test(arguments: [
        ("", "is not a URL"),
        ("mysql://u@h/db", "scheme mysql"),
        ("postgres://h:5432/db", "names no user"),
        ("postgres://u@/db", "names no host"),
        ("postgres://u@h:5432/", "names no database"),
        ("postgres://u@h/a/b", "names no database"),
        ("postgres://u@h/db?sslmode=require", "sslmode=require"),
        ("postgres://u@h/db?application_name=x", "unknown parameter application_name"),
    ])
    func refusesWhatItCannotUse(text: String, problem: String) {
        #expect {
            try DatabaseURL(text)
        } throws: { error in
            "\(error)".contains(problem) && !"\(error)".contains("hunter2")
        }
    }
}
