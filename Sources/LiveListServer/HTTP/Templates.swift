import LiveListEngine
import Mustache

/// The page templates, parsed once at start-up from `--templates`: `page.mustache` (one list) and
/// `index.mustache` (the lists being served). A missing or broken template stops start-up.
struct Templates: Sendable {
    let library: MustacheLibrary

    static let required = ["page", "index"]

    init(directory: String) async throws(StartupError) {
        do {
            library = try await MustacheLibrary(directory: directory)
        } catch {
            throw StartupError("cannot load the templates in \(directory): \(error)")
        }
        for name in Self.required where library.getTemplate(named: name) == nil {
            throw StartupError("the template \(directory)/\(name).mustache is missing")
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
