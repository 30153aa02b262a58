import LiveListEngine
import Mustache

/// The page templates, parsed once at start-up from `--templates`, or the built-in ones (`Templates/` of
/// the repository, compiled in): `page.mustache` (one list) and `index.mustache` (the lists being
/// served). A missing or broken template stops start-up.
struct Templates: Sendable {
    let library: MustacheLibrary

    static let required = ["page", "index"]

    init(directory: String?) async throws(StartupError) {
        let place = directory ?? "the built-in templates"
        do {
            if let directory {
                library = try await MustacheLibrary(directory: directory)
            } else {
                library = MustacheLibrary(templates: try BuiltInFiles.templates.mapValues { try MustacheTemplate(string: $0) })
            }
        } catch {
            throw StartupError("cannot load the templates in \(place): \(error)")
        }
        for name in Self.required where library.getTemplate(named: name) == nil {
            throw StartupError("the template \(name).mustache is missing in \(place)")
        }
    }

    func render(_ name: String, _ context: [String: Any]) -> String {
        library.render(context, withTemplate: name) ?? ""
    }
}

/// Why the server cannot start, for the operator.
public struct StartupError: Error, CustomStringConvertible, Sendable {
    public var description: String

    public init(_ description: String) {
        self.description = description
    }
}
