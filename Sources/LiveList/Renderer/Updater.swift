/// An updater says how a change of a list reaches its adapter: given the sections of the
/// previous render and of the next one, it computes what to apply (a changeset, a list of patch
/// operations, a whole new rendering) and returns it as its ``Output``.
///
/// A ``Renderer`` keeps the sections of its last successful render and hands them to its updater
/// with the new ones; the updater need not keep them. An updater may keep state of its own (a
/// cache of rendered output, say): `performUpdates` is `mutating`, and the renderer keeps the
/// mutations only when the call succeeds. It is `Sendable`, since the ``Renderer`` that holds it is.
///
/// Example for an updater that reports how many cells changed place or content:
///
///     struct ChangeCounter: Updater {
///         func performUpdates(
///             adapter: EmptyAdapter,
///             from source: [Section],
///             to target: [Section]
///         ) throws -> Int {
///             try StagedChangeset(source: source, target: target).changeCount
///         }
///     }
public protocol Updater: Sendable {
    /// The adapter that the updater works with.
    associatedtype Adapter: LiveList.Adapter

    /// What a render produces: a changeset, patch operations, or anything an updater computes.
    associatedtype Output

    // MARK: - Updating - required

    /// Computes the updates from the previous sections to the next ones.
    ///
    /// On the first render, `source` is empty. When it throws, the renderer keeps its previous
    /// sections and the updater's previous state, so nothing is lost: a later render is diffed
    /// against the last one that succeeded.
    ///
    /// - Parameters:
    ///   - adapter: The renderer's adapter.
    ///   - source: The sections of the last successful render.
    ///   - target: The sections to render.
    /// - Returns: What applies the change.
    /// - Throws: When the sections are bad input, such as `ListDiff.DiffError` for a duplicate id.
    mutating func performUpdates(adapter: Adapter, from source: [Section], to target: [Section]) throws -> Output
}
