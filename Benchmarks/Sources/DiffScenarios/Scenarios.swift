public import Foundation
public import ListDiff

/// The two lists of one scenario.
public enum ScenarioInput: Sendable {
    /// A flat list of UUIDs (family R-UUID).
    case uuids(source: [UUID], target: [UUID])
    /// A flat list of items (families R-Int, M and E).
    case items(source: [Item], target: [Item])
    /// A sectioned list (S-100x1000).
    case sections(source: [ItemSection], target: [ItemSection])

    /// The fingerprints of both sides, as `docs/DIFF-SCENARIOS.md` defines them.
    public var fingerprints: Fingerprints {
        switch self {
        case let .uuids(source, target):
            Fingerprints(source: fingerprint(source), target: fingerprint(target))
        case let .items(source, target):
            Fingerprints(source: fingerprint(source), target: fingerprint(target))
        case let .sections(source, target):
            Fingerprints(source: fingerprint(source), target: fingerprint(target))
        }
    }

    /// The number of elements (cells, for sections) in the source and in the target.
    public var elementCounts: (source: Int, target: Int) {
        switch self {
        case let .uuids(source, target): (source.count, target.count)
        case let .items(source, target): (source.count, target.count)
        case let .sections(source, target):
            (source.reduce(0) { $0 + $1.elements.count }, target.reduce(0) { $0 + $1.elements.count })
        }
    }
}

/// The changes a scenario was built with: what a differ that matches by identity must report as deleted,
/// inserted and updated. (Moves are left out: their number is the differ's choice.)
///
/// For sections, ``elementDeletes`` leaves out the cells of deleted sections (they go with their
/// section), and ``elementInserts`` counts the cells of inserted sections (which are inserted empty).
public struct BuiltChanges: Equatable, Sendable {
    /// Elements deleted, outside deleted sections.
    public var elementDeletes: Int
    /// Elements inserted, inserted sections' cells included.
    public var elementInserts: Int
    /// Surviving elements whose content changed.
    public var elementUpdates: Int
    /// Sections deleted.
    public var sectionDeletes: Int
    /// Sections inserted.
    public var sectionInserts: Int
    /// Surviving sections whose own content changed.
    public var sectionUpdates: Int

    /// Creates a description of the built changes.
    public init(
        elementDeletes: Int, elementInserts: Int, elementUpdates: Int,
        sectionDeletes: Int = 0, sectionInserts: Int = 0, sectionUpdates: Int = 0
    ) {
        self.elementDeletes = elementDeletes
        self.elementInserts = elementInserts
        self.elementUpdates = elementUpdates
        self.sectionDeletes = sectionDeletes
        self.sectionInserts = sectionInserts
        self.sectionUpdates = sectionUpdates
    }
}

/// DifferenceKit's and the standard library's figures for a scenario, as measured once on this machine
/// and recorded in `docs/DIFF-SCENARIOS.md` (medians in milliseconds; the machine is noisy, about ±30%).
public struct ReferenceFigures: Sendable {
    /// DifferenceKit 1.3.0's median time.
    public var differenceKitMilliseconds: Double
    /// The standard library's `difference(from:)` median time, when it was measured.
    public var stdlibMilliseconds: Double?
    /// How the document writes the standard library's figure ("5,512 (flattened)", "(319 s)", "–").
    public var stdlibText: String
    /// DifferenceKit's element moves.
    public var differenceKitMoves: Int
    /// DifferenceKit's section moves, for the sectioned scenario.
    public var differenceKitSectionMoves: Int?

    /// Creates reference figures.
    public init(
        differenceKitMilliseconds: Double, stdlibMilliseconds: Double?, stdlibText: String,
        differenceKitMoves: Int, differenceKitSectionMoves: Int? = nil
    ) {
        self.differenceKitMilliseconds = differenceKitMilliseconds
        self.stdlibMilliseconds = stdlibMilliseconds
        self.stdlibText = stdlibText
        self.differenceKitMoves = differenceKitMoves
        self.differenceKitSectionMoves = differenceKitSectionMoves
    }
}

/// A fingerprint that differs from the one `docs/DIFF-SCENARIOS.md` expects.
public struct FingerprintMismatch: Error, Sendable, CustomStringConvertible {
    /// The scenario's name.
    public var scenario: String
    /// What the document expects.
    public var expected: Fingerprints
    /// What the generator built.
    public var actual: Fingerprints

    /// Creates a mismatch report.
    public init(scenario: String, expected: Fingerprints, actual: Fingerprints) {
        self.scenario = scenario
        self.expected = expected
        self.actual = actual
    }

    public var description: String {
        var sides = [String]()
        if actual.source != expected.source {
            sides.append("source \(hex(actual.source)), expected \(hex(expected.source))")
        }
        if actual.target != expected.target {
            sides.append("target \(hex(actual.target)), expected \(hex(expected.target))")
        }
        return "\(scenario): fingerprint mismatch: " + sides.joined(separator: "; ")
    }
}

/// One benchmark scenario of `docs/DIFF-SCENARIOS.md`: how to build its inputs and what they must hash to.
public struct Scenario: Sendable, Identifiable {
    /// The scenario's name as the document writes it, such as `M-100k`.
    public let name: String
    /// The fingerprints the inputs must have.
    public let expected: Fingerprints
    /// The number of elements (cells, for sections) in the source list.
    public let elementCount: Int
    /// Whether the scenario has a million elements: the standard library's `difference(from:)` takes
    /// minutes on it, so baselines skip it.
    public var isMillionScale: Bool {
        elementCount >= 1_000_000
    }
    /// The changes the inputs were built with.
    public let builtChanges: BuiltChanges
    /// DifferenceKit's and the standard library's recorded figures, if the document has them.
    public let reference: ReferenceFigures?
    /// Builds the inputs.
    private let build: @Sendable () -> ScenarioInput

    /// The scenario's name.
    public var id: String {
        name
    }

    /// Creates a scenario.
    public init(
        name: String,
        expected: Fingerprints,
        elementCount: Int,
        builtChanges: BuiltChanges,
        reference: ReferenceFigures?,
        build: @escaping @Sendable () -> ScenarioInput
    ) {
        self.name = name
        self.expected = expected
        self.elementCount = elementCount
        self.builtChanges = builtChanges
        self.reference = reference
        self.build = build
    }

    /// Builds the scenario's inputs (deterministic: every call builds the same lists).
    public func makeInput() -> ScenarioInput {
        build()
    }

    /// Compares fingerprints with ``expected``.
    ///
    /// - Returns: The mismatch, or `nil` when both sides are as `docs/DIFF-SCENARIOS.md` says.
    public func check(_ actual: Fingerprints) -> FingerprintMismatch? {
        actual == expected ? nil : FingerprintMismatch(scenario: name, expected: expected, actual: actual)
    }

    /// Builds the inputs and checks their fingerprints against ``expected``.
    ///
    /// - Throws: ``FingerprintMismatch`` when either side differs from `docs/DIFF-SCENARIOS.md`.
    public func makeVerifiedInput() throws(FingerprintMismatch) -> ScenarioInput {
        let input = build()
        if let mismatch = check(input.fingerprints) {
            throw mismatch
        }
        return input
    }
}

/// The catalog of scenarios, in the order of `docs/DIFF-SCENARIOS.md`.
public enum Scenarios {
    /// Every scenario: R-UUID-5k/100k/1M, R-Int-5k/100k/1M, M-1k/5k/100k/1M, E-100k, S-100x1000.
    public static let all: [Scenario] = [
        rUUID("R-UUID-5k", .r5k, Fingerprints(source: 0xd60f_0772_51fb_3d22, target: 0x49ae_f9a9_bf2e_b8e3),
              ReferenceFigures(differenceKitMilliseconds: 1.06, stdlibMilliseconds: 57.6, stdlibText: "57.6",
                               differenceKitMoves: 196)),
        rUUID("R-UUID-100k", .r100k, Fingerprints(source: 0x655b_ca72_2ff9_41c4, target: 0xde73_cb4e_1e64_482a),
              ReferenceFigures(differenceKitMilliseconds: 47.5, stdlibMilliseconds: 3336, stdlibText: "3,336",
                               differenceKitMoves: 1993)),
        rUUID("R-UUID-1M", .r1M, Fingerprints(source: 0x2043_33df_b0ec_2d04, target: 0x26e5_cf91_5594_6f24),
              ReferenceFigures(differenceKitMilliseconds: 646, stdlibMilliseconds: 319_000, stdlibText: "(319 s)",
                               differenceKitMoves: 19992)),
        rInt("R-Int-5k", .r5k, Fingerprints(source: 0x538b_d1a3_6e58_a2ec, target: 0x67d2_7374_82ff_032c)),
        rInt("R-Int-100k", .r100k, Fingerprints(source: 0x6ad1_b5c5_899b_620a, target: 0xa984_20fa_971d_7fa6)),
        rInt("R-Int-1M", .r1M, Fingerprints(source: 0x9738_693b_6599_3348, target: 0x2221_0eee_6953_9530)),
        m("M-1k", count: 1000, changes: 10, seed: 11,
          Fingerprints(source: 0x09e3_845f_d7d9_207c, target: 0x2f69_3e88_e775_d4f8),
          ReferenceFigures(differenceKitMilliseconds: 0.10, stdlibMilliseconds: 0.19, stdlibText: "0.19",
                           differenceKitMoves: 913)),
        m("M-5k", count: 5000, changes: 200, seed: 12,
          Fingerprints(source: 0x538b_d1a3_6e58_a2ec, target: 0x7b8c_3699_46a0_8f85),
          ReferenceFigures(differenceKitMilliseconds: 0.76, stdlibMilliseconds: 16.3, stdlibText: "16.3",
                           differenceKitMoves: 4755)),
        m("M-100k", count: 100_000, changes: 4000, seed: 13,
          Fingerprints(source: 0x6ad1_b5c5_899b_620a, target: 0xa049_1fc6_4a7f_f693),
          ReferenceFigures(differenceKitMilliseconds: 36.4, stdlibMilliseconds: 4092, stdlibText: "4,092",
                           differenceKitMoves: 95976)),
        m("M-1M", count: 1_000_000, changes: 40000, seed: 14,
          Fingerprints(source: 0x9738_693b_6599_3348, target: 0xa3e1_df89_7a23_50cc),
          ReferenceFigures(differenceKitMilliseconds: 553, stdlibMilliseconds: nil, stdlibText: "–",
                           differenceKitMoves: 959_905)),
        Scenario(
            name: "E-100k",
            expected: Fingerprints(source: 0x6ad1_b5c5_899b_620a, target: 0x6ad1_b5c5_899b_620a),
            elementCount: 100_000,
            builtChanges: BuiltChanges(elementDeletes: 0, elementInserts: 0, elementUpdates: 0),
            reference: ReferenceFigures(differenceKitMilliseconds: 36.1, stdlibMilliseconds: 1.21, stdlibText: "1.21",
                                        differenceKitMoves: 0),
            build: {
                let (source, target) = makeE(count: 100_000)
                return .items(source: source, target: target)
            }
        ),
        Scenario(
            name: "S-100x1000",
            expected: Fingerprints(source: 0x8a0f_393e_1668_e305, target: 0xb79f_61fd_5e86_920e),
            elementCount: 100_000,
            // Each of the 95 surviving sections loses 10 cells, has 10 updated and gets 10 new ones (the
            // fresh cells handed to `mutate`); the 5 new sections bring 1,000 new cells each.
            builtChanges: BuiltChanges(
                elementDeletes: 95 * 10, elementInserts: 95 * 10 + 5 * 1000, elementUpdates: 95 * 10,
                sectionDeletes: 5, sectionInserts: 5, sectionUpdates: 5
            ),
            reference: ReferenceFigures(differenceKitMilliseconds: 38.5, stdlibMilliseconds: 5512,
                                        stdlibText: "5,512 (flattened)", differenceKitMoves: 74797,
                                        differenceKitSectionMoves: 42),
            build: {
                let (source, target) = makeS()
                return .sections(source: source, target: target)
            }
        ),
    ]

    /// The scenario called `name`, if there is one.
    public static func named(_ name: String) -> Scenario? {
        all.first { $0.name == name }
    }

    /// Builds every scenario and checks its fingerprints.
    ///
    /// - Returns: The mismatches; empty when every scenario is built exactly as `docs/DIFF-SCENARIOS.md` says.
    public static func verifyAll() -> [FingerprintMismatch] {
        all.compactMap { $0.check($0.makeInput().fingerprints) }
    }

    private static func rUUID(
        _ name: String, _ parameters: RParameters, _ expected: Fingerprints, _ reference: ReferenceFigures
    ) -> Scenario {
        Scenario(
            name: name, expected: expected, elementCount: parameters.count,
            builtChanges: BuiltChanges(
                elementDeletes: parameters.deleteRange.count, elementInserts: parameters.insertRange.count,
                elementUpdates: 0
            ),
            reference: reference,
            build: {
                let (source, target) = makeRUUID(parameters)
                return .uuids(source: source, target: target)
            }
        )
    }

    private static func rInt(_ name: String, _ parameters: RParameters, _ expected: Fingerprints) -> Scenario {
        Scenario(
            name: name, expected: expected, elementCount: parameters.count,
            builtChanges: BuiltChanges(
                elementDeletes: parameters.deleteRange.count, elementInserts: parameters.insertRange.count,
                elementUpdates: 0
            ),
            reference: nil,
            build: {
                let (source, target) = makeRInt(parameters)
                return .items(source: source, target: target)
            }
        )
    }

    private static func m(
        _ name: String, count: Int, changes: Int, seed: UInt64, _ expected: Fingerprints,
        _ reference: ReferenceFigures
    ) -> Scenario {
        Scenario(
            name: name, expected: expected, elementCount: count,
            builtChanges: BuiltChanges(elementDeletes: changes, elementInserts: changes, elementUpdates: changes),
            reference: reference,
            build: {
                let (source, target) = makeM(count: count, changes: changes, seed: seed)
                return .items(source: source, target: target)
            }
        )
    }
}
