import Foundation

/// The files of `Public/` and `Templates/` compiled into the server (`EmbeddedResources`, written at
/// build time by the EmbedResources plugin), so that a program that depends on LiveList serves its
/// pages from any working directory. `ServerConfiguration.publicDirectory` and `templatesDirectory` replace them.
enum BuiltInFiles {
    /// Every embedded file's bytes, by path from the repository's root (`Public/livelist.js`).
    static let all: [String: [UInt8]] = EmbeddedResources.base64.reduce(into: [:]) { files, entry in
        // The generator writes valid base64; a failure here is a broken build, caught by EmbeddedResourcesTests.
        files[entry.key] = Data(base64Encoded: entry.value, options: .ignoreUnknownCharacters).map { [UInt8]($0) } ?? []
    }

    /// The bytes of `Public/NAME`, if it is built in.
    static func publicFile(_ name: String) -> [UInt8]? {
        all["Public/" + name]
    }

    /// The built-in `Public/` files by request path (`/livelist.js`).
    static var publicFiles: [String: [UInt8]] {
        all.reduce(into: [:]) { files, entry in
            guard entry.key.hasPrefix("Public/") else { return }
            files[String(entry.key.dropFirst("Public".count))] = entry.value
        }
    }

    /// The built-in templates, by name without `.mustache`.
    static var templates: [String: String] {
        all.reduce(into: [:]) { templates, entry in
            guard entry.key.hasPrefix("Templates/"), entry.key.hasSuffix(".mustache") else { return }
            let name = entry.key.dropFirst("Templates/".count).dropLast(".mustache".count)
            templates[String(name)] = String(decoding: entry.value, as: UTF8.self)
        }
    }
}
