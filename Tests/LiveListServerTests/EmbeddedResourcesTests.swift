import Foundation
import Testing
@testable import LiveListServer
import LiveListHTTP

/// `Public/` and `Templates/` are compiled into the server at build time (Plugins/EmbedResources): the
/// built-in copy must be the repository's (the readable `*.src.js` left out), and an app configured
/// with no directories must serve it.
@Suite struct EmbeddedResourcesTests {
    /// Every file of `Public/` and `Templates/` (dotfiles left out), by path from the repository's root.
    static func filesOnDisk() throws -> [String: [UInt8]] {
        var files: [String: [UInt8]] = [:]
        for folder in ["Public", "Templates"] {
            let directory = RouteClient.root + "/" + folder
            let names = try FileManager.default.subpathsOfDirectory(atPath: directory)
            for name in names where !name.split(separator: "/").contains(where: { $0.hasPrefix(".") }) && !name.hasSuffix(".src.js") {
                var isDirectory: ObjCBool = false
                guard FileManager.default.fileExists(atPath: directory + "/" + name, isDirectory: &isDirectory), !isDirectory.boolValue else { continue }
                files[folder + "/" + name] = [UInt8](try Data(contentsOf: URL(fileURLWithPath: directory + "/" + name)))
            }
        }
        return files
    }

    @Test func theBuiltInFilesAreTheRepositorys() throws {
        let disk = try Self.filesOnDisk()
        let stale = Set(disk.keys).symmetricDifference(BuiltInFiles.all.keys).sorted()
            + disk.keys.filter { BuiltInFiles.all[$0] != nil && BuiltInFiles.all[$0] != disk[$0] }.sorted()
        #expect(stale.isEmpty, "stale built-in files \(stale): the EmbedResources plugin did not run")
        #expect(BuiltInFiles.templates.keys.sorted() == ["index", "page"])
    }

    @Test func anAppWithoutDirectoriesServesTheBuiltInFiles() async throws {
        let client = try await RouteClient { configuration in
            configuration.publicDirectory = nil
            configuration.templatesDirectory = nil
        }
        let disk = try Self.filesOnDisk()
        let script = try await client.get("/livelist.js")
        #expect(script.status == 200)
        #expect(script.body == disk["Public/livelist.js"])
        #expect(script.header("Content-Type") == "text/javascript; charset=utf-8")
        #expect(script.header("Cache-Control") == "no-cache")
        let etag = try #require(script.header("ETag"))
        let again = try await client.get("/livelist.js?v=1", headers: [("If-None-Match", "\"other\", " + etag)])
        #expect(again.status == 304)
        #expect(again.header("Cache-Control") == "public, max-age=31536000, immutable")
        #expect(try await client.head("/site.css").status == 200)
        #expect(try await client.get("/missing.js").status == 404)
        #expect(try await client.get("/../Templates/page.mustache").status == 404)

        let index = try await client.get("/")
        #expect(index.status == 200)
        let page = try await client.put("/lists/groceries", headers: [("Content-Type", "application/json")],
                                        body: Array(#"{"sections":[{"id":"a","cells":[{"id":"milk","text":"Milk"}]}]}"#.utf8))
        #expect(page.status == 201)
        let html = try await client.get("/lists/groceries")
        #expect(html.status == 200)
        #expect(html.text.contains("data-list=\"groceries\""))
        // The page links the built-in script by its content hash.
        let hash = contentHash(try #require(disk["Public/livelist.js"]))
        #expect(html.text.contains("/livelist.js?v=\(hash)"))
    }
}
