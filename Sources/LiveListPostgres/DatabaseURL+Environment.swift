import Foundation

// libpq's defaults from the environment: its `PG*` variables and its password file (`PGPASSFILE`, by
// default `~/.pgpass`), read with libpq's rules (docs/DEPLOYMENT.md, "The URL").

/// The environment a URL is read in: libpq's variables and the home directory.
struct ConnectionDefaults {
    var variables: [String: String]
    /// Where `.pgpass` is looked for; nil reads no password file.
    var home: String?

    /// The variable `name`, when it is set and not empty.
    func variable(_ name: String) -> String? {
        guard let value = variables[name], !value.isEmpty else { return nil }
        return value
    }

    /// The password file: `PGPASSFILE`, else `.pgpass` in the home directory; nil when neither.
    var passwordFilePath: String? {
        variable("PGPASSFILE") ?? home.map { ($0.hasSuffix("/") ? String($0.dropLast()) : $0) + "/.pgpass" }
    }

    /// The home directory of the process's account, as libpq finds it when `HOME` is not set.
    static func accountHome() -> String? {
        guard let entry = getpwuid(getuid()), let directory = entry.pointee.pw_dir else { return nil }
        return String(cString: directory)
    }
}

/// A password file as libpq reads it: lines of `HOST:PORT:DATABASE:USER:PASSWORD`, where `*` in any
/// of the first four fields matches anything and `\` escapes a `:` or a `\`; blank lines and lines
/// starting with `#` are skipped; the first line that matches gives the password. A file that is not
/// a plain file, or that its group or others may access, is not used (libpq warns and ignores it).
struct PasswordFile: Sendable, Equatable {
    /// One line: its first four fields (nil for `*`) and its password.
    struct Entry: Sendable, Equatable {
        var fields: [String?]
        var password: String
    }

    /// What reading a file found.
    enum Reading {
        case found(PasswordFile)
        case missing
        /// Not used, and why (for the log).
        case ignored(String)
    }

    var path: String
    var entries: [Entry]

    /// The socket directory that libpq (as Debian builds it) matches as `localhost` in the file.
    static let defaultSocketDirectory = "/var/run/postgresql"

    static func read(_ path: String) -> Reading {
        var info = stat()
        guard stat(path, &info) == 0 else { return .missing }
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            return .ignored("the password file \(path) is not a plain file, so it is not used (as libpq does not)")
        }
        guard info.st_mode & 0o077 == 0 else {
            return .ignored("the password file \(path) has group or world access, so it is not used (as libpq does not): chmod 0600 \(path)")
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            return .ignored("the password file \(path) cannot be read, so it is not used")
        }
        return .found(PasswordFile(path: path, text: String(decoding: data, as: UTF8.self)))
    }

    init(path: String, text: String) {
        self.path = path
        entries = text.split(whereSeparator: \.isNewline).compactMap(Self.entry)
    }

    /// A line's entry; nil for a comment, or a line of fewer than five fields.
    static func entry(_ line: Substring) -> Entry? {
        guard !line.hasPrefix("#") else { return nil }
        var fields: [String] = [""]
        var raw: [String] = [""]
        var escaped = false
        for character in line {
            if escaped {
                fields[fields.count - 1].append(character)
                raw[raw.count - 1] += "\\" + String(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if character == ":" {
                // The password ends at an unescaped colon too.
                if fields.count == 5 { break }
                fields.append("")
                raw.append("")
            } else {
                fields[fields.count - 1].append(character)
                raw[raw.count - 1].append(character)
            }
        }
        guard fields.count == 5 else { return nil }
        return Entry(fields: (0 ..< 4).map { raw[$0] == "*" ? nil : fields[$0] }, password: fields[4])
    }

    /// The password of the first line that matches; nil when none does (or its password is empty).
    func password(host: String, port: Int, database: String, user: String) -> String? {
        let matched = host == Self.defaultSocketDirectory || host == Self.defaultSocketDirectory + "/" ? "localhost" : host
        let wanted = [matched, String(port), database, user]
        for entry in entries where zip(entry.fields, wanted).allSatisfy({ $0 == nil || $0 == $1 }) {
            return entry.password.isEmpty ? nil : entry.password
        }
        return nil
    }
}
