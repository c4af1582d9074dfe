import Foundation
import ParserFuzzing
import TestTraits
import Testing

/// The fuzzers' corpora (FuzzTesting/Corpus/TARGET: the seeds, and every input
/// that once crashed a parser) run through the parsers on every test run, without
/// the fuzzer: a parser that traps on any of them fails here.
@Suite("Fuzz corpora replayed", .ownThreads)
struct CorpusReplayTests {
    static let corpora = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../FuzzTesting/Corpus").standardizedFileURL

    @Test("every input of every target", arguments: FuzzTarget.allCases)
    func replay(_ target: FuzzTarget) throws {
        let directory = Self.corpora.appendingPathComponent(target.rawValue)
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
        #expect(names.count >= 3, "a corpus of a few seeds at least")
        for name in names {
            target.run(Array(try Data(contentsOf: directory.appendingPathComponent(name))))
        }
    }
}
