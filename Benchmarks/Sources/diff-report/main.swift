// diff-report: builds every scenario of `docs/DIFF-SCENARIOS.md`, checks the inputs' fingerprints, then
// times ListDiff's `StagedChangeset` and the standard library's `difference(from:)` on each, in one
// process, and prints a Markdown report on standard output (progress goes to standard error).
//
//     swift run -c release --package-path Benchmarks diff-report [--no-stdlib] [--verify-only] [SCENARIO ...]

import DiffScenarios
import Foundation
import ListDiff

// MARK: - Options

/// What the command line asked for.
struct Options {
    /// Only these scenarios (all when empty).
    var names: [String] = []
    /// Whether to time the standard library's `difference(from:)` too.
    var runStdlib = true
    /// Whether to stop after checking the fingerprints.
    var verifyOnly = false

    static let usage = """
        usage: diff-report [--no-stdlib] [--verify-only] [SCENARIO ...]

        Builds the scenarios of docs/DIFF-SCENARIOS.md, checks their fingerprints (exit status 1 on a mismatch),
        then times ListDiff and the standard library's difference(from:) on each and prints Markdown.
          --no-stdlib    time ListDiff only
          --verify-only  check the fingerprints and stop
          SCENARIO       names such as M-100k (default: all)
        Build it in release: swift run -c release --package-path Benchmarks diff-report
        """

    /// Parses the arguments, exiting on `--help` or on an unknown option or scenario.
    static func parse(_ arguments: [String]) -> Options {
        var options = Options()
        for argument in arguments {
            switch argument {
            case "--no-stdlib": options.runStdlib = false
            case "--verify-only": options.verifyOnly = true
            case "-h", "--help":
                print(usage)
                exit(0)
            default:
                guard !argument.hasPrefix("-"), Scenarios.named(argument) != nil else {
                    let known = Scenarios.all.map(\.name).joined(separator: ", ")
                    fail("unknown argument '\(argument)' (scenarios: \(known))\n\n\(usage)", status: 2)
                }
                options.names.append(argument)
            }
        }
        return options
    }
}

/// Writes `message` to standard error.
func log(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}

/// Writes `message` to standard error and exits with `status`.
func fail(_ message: String, status: Int32 = 1) -> Never {
    log("diff-report: " + message)
    exit(status)
}

// MARK: - Timing

/// Milliseconds in a duration.
func milliseconds(_ duration: Duration) -> Double {
    let (seconds, attoseconds) = duration.components
    return Double(seconds) * 1000 + Double(attoseconds) / 1e15
}

/// The results of running one piece of work repeatedly.
struct Timing {
    /// Each counted run, in milliseconds.
    var samples: [Double]

    /// The median of the samples (the mean of the middle two for an even count).
    var median: Double {
        let sorted = samples.sorted()
        let middle = sorted.count / 2
        return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
    }
}

/// Folds every result into this, so that the optimiser cannot drop the work being timed.
nonisolated(unsafe) var sink = 0

/// Runs `work` once to warm up, then again until it has at least `minRuns` samples and has used
/// `budget` milliseconds, or has `maxRuns` samples. A warm-up slower than a quarter of the budget is
/// kept as a sample, so that slow work is not run once for nothing.
func measure(minRuns: Int, maxRuns: Int, budget: Double, _ work: () -> Int) -> Timing {
    let clock = ContinuousClock()
    var result = 0
    let warmUp = milliseconds(clock.measure { result = work() })
    sink &+= result
    var samples = warmUp > budget / 4 ? [warmUp] : []
    var spent = samples.reduce(0, +)
    while samples.count < maxRuns, samples.count < minRuns || spent < budget {
        let sample = milliseconds(clock.measure { result = work() })
        sink &+= result
        samples.append(sample)
        spent += sample
    }
    return Timing(samples: samples)
}

// MARK: - The differs

/// The changes of a staged changeset, added up over its stages.
struct ChangeCounts {
    var elementDeleted = 0
    var elementInserted = 0
    var elementUpdated = 0
    var elementMoved = 0
    var sectionDeleted = 0
    var sectionInserted = 0
    var sectionUpdated = 0
    var sectionMoved = 0

    init(_ changeset: StagedChangeset) {
        for stage in changeset.stages {
            elementDeleted += stage.elementDeleted.count
            elementInserted += stage.elementInserted.count
            elementUpdated += stage.elementUpdated.count
            elementMoved += stage.elementMoved.count
            sectionDeleted += stage.sectionDeleted.count
            sectionInserted += stage.sectionInserted.count
            sectionUpdated += stage.sectionUpdated.count
            sectionMoved += stage.sectionMoved.count
        }
    }

    /// Whether the deletes, inserts and updates are those the scenario was built with.
    func matches(_ built: BuiltChanges) -> Bool {
        elementDeleted == built.elementDeletes && elementInserted == built.elementInserts
            && elementUpdated == built.elementUpdates && sectionDeleted == built.sectionDeletes
            && sectionInserted == built.sectionInserts && sectionUpdated == built.sectionUpdates
    }
}

// MARK: - Formatting

/// `value` with a comma between each group of three digits.
func grouped(_ value: Int) -> String {
    let digits = String(value.magnitude)
    var result = ""
    for (offset, digit) in digits.enumerated() {
        if offset > 0, (digits.count - offset) % 3 == 0 {
            result.append(",")
        }
        result.append(digit)
    }
    return value < 0 ? "-" + result : result
}

/// A time in milliseconds with three significant digits or so (thousands grouped).
func formatMilliseconds(_ value: Double) -> String {
    switch value {
    case ..<1: String(format: "%.3f", value)
    case ..<10: String(format: "%.2f", value)
    case ..<100: String(format: "%.1f", value)
    default: grouped(Int(value.rounded()))
    }
}

/// A ratio, with more digits when it is small.
func formatRatio(_ value: Double) -> String {
    switch value {
    case ..<0.1: String(format: "%.3f", value)
    case ..<10: String(format: "%.2f", value)
    case ..<100: String(format: "%.1f", value)
    default: grouped(Int(value.rounded()))
    }
}

/// Element moves, and section moves when the list has sections.
func formatMoves(elements: Int, sections: Int?) -> String {
    guard let sections else {
        return grouped(elements)
    }
    return "\(grouped(elements)) cell + \(grouped(sections)) section"
}

// MARK: - Report

/// What was measured on one scenario.
struct Row {
    var scenario: Scenario
    var isSectioned: Bool
    var elementCounts: (source: Int, target: Int)
    var listDiff: Timing
    var stdlib: Timing?
    var counts: ChangeCounts
    var stdlibCounts: StdlibCounts?
}

let options = Options.parse(Array(CommandLine.arguments.dropFirst()))
let selected = options.names.isEmpty ? Scenarios.all : Scenarios.all.filter { options.names.contains($0.name) }

#if DEBUG
log("diff-report: WARNING: this is a debug build; times mean nothing. Use `swift run -c release ...`.")
#endif

// 1. Fingerprints of every selected scenario, before any timing.
log("Building \(selected.count) scenarios and checking their fingerprints…")
var fingerprintLines = [String]()
var mismatches = [FingerprintMismatch]()
for scenario in selected {
    let actual = scenario.makeInput().fingerprints
    let mismatch = scenario.check(actual)
    let ok = mismatch == nil
    if let mismatch {
        mismatches.append(mismatch)
    }
    fingerprintLines.append("| \(scenario.name) | \(hex(actual.source)) | \(hex(actual.target)) | \(ok ? "ok" : "**MISMATCH**") |")
}
guard mismatches.isEmpty else {
    for mismatch in mismatches {
        log("diff-report: " + mismatch.description)
    }
    fail("\(mismatches.count) of \(selected.count) scenarios differ from docs/DIFF-SCENARIOS.md; not timing anything.")
}
log("All \(selected.count) fingerprints match docs/DIFF-SCENARIOS.md.")
if options.verifyOnly {
    print("| scenario | source fp | target fp | check |\n|---|---|---|---|")
    fingerprintLines.forEach { print($0) }
    exit(0)
}

// 2. Timing, one scenario at a time (its inputs built again, and dropped before the next).
var rows = [Row]()
for scenario in selected {
    let input: ScenarioInput
    do {
        input = try scenario.makeVerifiedInput()
    } catch {
        fail(error.description)
    }
    let large = scenario.isMillionScale
    let changeset: StagedChangeset
    do {
        changeset = try input.listDiff()
    } catch {
        fail("\(scenario.name): ListDiff threw: \(error)")
    }
    let listDiffTiming = measure(minRuns: large ? 3 : 5, maxRuns: 15, budget: large ? 2000 : 3000) {
        // The first run above already threw if the input were bad; this one cannot.
        (try? input.listDiff())?.changeCount ?? -1
    }
    var stdlibTiming: Timing?
    var stdlibCounts: StdlibCounts?
    if options.runStdlib, !scenario.isMillionScale {
        let baseline = StdlibBaseline(input)
        var last = StdlibCounts(removals: 0, insertions: 0)
        stdlibTiming = measure(minRuns: 3, maxRuns: 15, budget: 3000) {
            last = baseline.run()
            return last.removals &+ last.insertions
        }
        stdlibCounts = last
    }
    let row = Row(
        scenario: scenario,
        isSectioned: { if case .sections = input { true } else { false } }(),
        elementCounts: input.elementCounts,
        listDiff: listDiffTiming,
        stdlib: stdlibTiming,
        counts: ChangeCounts(changeset),
        stdlibCounts: stdlibCounts
    )
    rows.append(row)
    var line = "\(scenario.name): ListDiff \(formatMilliseconds(listDiffTiming.median)) ms (\(listDiffTiming.samples.count) runs)"
    if let stdlibTiming {
        line += ", stdlib \(formatMilliseconds(stdlibTiming.median)) ms (\(stdlibTiming.samples.count) runs)"
    }
    log(line)
}

// 3. The report.
let cores = ProcessInfo.processInfo.activeProcessorCount
print("## ListDiff vs the standard library on the docs/DIFF-SCENARIOS.md scenarios")
print()
print("Medians in milliseconds over the runs shown, measured in one process (\(cores) cores); ratios within")
print("one run are what to compare, the machine is noisy. \"doc\" columns are docs/DIFF-SCENARIOS.md's figures for")
print("DifferenceKit 1.3.0 and the standard library, measured earlier on this kind of machine.")
print()
print("| scenario | ListDiff ms | stdlib ms | stdlib / ListDiff | ListDiff moves | runs (ListDiff / stdlib) | DifferenceKit ms (doc) | stdlib ms (doc) | stdlib / DifferenceKit (doc) | DifferenceKit moves (doc) |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for row in rows {
    let stdlibText = row.stdlib.map { formatMilliseconds($0.median) + (row.isSectioned ? " (flattened)" : "") } ?? "–"
    let ratio = row.stdlib.map { formatRatio($0.median / row.listDiff.median) } ?? "–"
    let moves = formatMoves(
        elements: row.counts.elementMoved, sections: row.isSectioned ? row.counts.sectionMoved : nil
    )
    let runs = "\(row.listDiff.samples.count) / " + (row.stdlib.map { String($0.samples.count) } ?? "–")
    var cells = [
        row.scenario.name, formatMilliseconds(row.listDiff.median), stdlibText, ratio, moves, runs,
    ]
    if let reference = row.scenario.reference {
        cells += [
            formatMilliseconds(reference.differenceKitMilliseconds),
            reference.stdlibText,
            reference.stdlibMilliseconds.map { formatRatio($0 / reference.differenceKitMilliseconds) } ?? "–",
            formatMoves(elements: reference.differenceKitMoves, sections: reference.differenceKitSectionMoves),
        ]
    } else {
        cells += ["–", "–", "–", "–"]
    }
    print("| " + cells.joined(separator: " | ") + " |")
}

if let row = rows.first(where: { $0.scenario.name == "E-100k" }), let stdlib = row.stdlib,
   let reference = row.scenario.reference, let referenceStdlib = reference.stdlibMilliseconds {
    print()
    print(
        "E-100k (unchanged list): ListDiff costs \(formatRatio(row.listDiff.median / stdlib.median))× the time of "
            + "stdlib `difference(from:)` (DifferenceKit in docs/DIFF-SCENARIOS.md: "
            + "\(formatRatio(reference.differenceKitMilliseconds / referenceStdlib))×)."
    )
}

print()
print("### Change counts")
print()
print("ListDiff's changes added up over all stages (sections: deleted / inserted / updated / moved). \"as built\"")
print("compares deletes, inserts and updates with what the generator put in; stdlib counts removals + insertions.")
print()
print("| scenario | elements source → target | deleted | inserted | updated | moved | sections d / i / u / m | as built | stdlib removals + insertions |")
print("|---|---:|---:|---:|---:|---:|---:|---|---:|")
for row in rows {
    let counts = row.counts
    let sections = row.isSectioned
        ? "\(counts.sectionDeleted) / \(counts.sectionInserted) / \(counts.sectionUpdated) / \(counts.sectionMoved)"
        : "–"
    let built = row.scenario.builtChanges
    let asBuilt = counts.matches(built)
        ? "yes"
        : "**no** (built: \(built.elementDeletes) / \(built.elementInserts) / \(built.elementUpdates))"
    let stdlib = row.stdlibCounts.map { "\(grouped($0.removals)) + \(grouped($0.insertions))" } ?? "–"
    let cells = [
        row.scenario.name,
        "\(grouped(row.elementCounts.source)) → \(grouped(row.elementCounts.target))",
        grouped(counts.elementDeleted), grouped(counts.elementInserted), grouped(counts.elementUpdated),
        grouped(counts.elementMoved), sections, asBuilt, stdlib,
    ]
    print("| " + cells.joined(separator: " | ") + " |")
}

print()
print("### Fingerprints (FNV-1a 64 of the generated inputs)")
print()
print("All \(selected.count) match docs/DIFF-SCENARIOS.md.")
print()
print("| scenario | source fp | target fp | check |")
print("|---|---|---|---|")
fingerprintLines.forEach { print($0) }
log("done (checksum of the timed results: \(sink))")
