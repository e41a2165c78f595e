package dev.runjournal.conformance;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** The runner's checks of itself, run after the replays (a runner that cannot fail proves nothing). */
final class SelfTests {
  private SelfTests() {}

  /**
   * The runner's own checks (FORMAT.md "The runners' self-test" and "Reading a file"): each is
   * null when it held, else what went wrong.
   */
  static List<String> run(Config config, Path selftestDir) throws Exception {
    List<String> problems = new ArrayList<>();
    problems.add(
        mustFail(
            config,
            selftestDir.resolve("wrong_expectation.json"),
            List.of("wrong_expectation", "step 1", "lastSeq", "expected 7", "actual \"2\"")));
    problems.add(
        mustFail(
            config,
            selftestDir.resolve("short_take.json"),
            List.of(
                "short_take",
                "step 1",
                "expected 3 stream messages before cancelling, the stream ended after 1")));
    problems.add(mustRefuse("{\"s\": \"a\\ud800b\"}", "a lone high surrogate"));
    problems.add(mustRefuse("{\"s\": \"\\udc00\"}", "a lone low surrogate"));
    problems.add(mustRefuse("{\"\\ud800\": 1}", "a lone surrogate in a key"));
    problems.add(mustRefuse("{\"a\": 1, \"a\": 2}", "a key twice in one object"));
    problems.add(mustRefuse("{\"a\": {\"b\": 1, \"b\": 1}}", "a key twice in an inner object"));
    problems.add(mustRefuse("{\"n\": 2.0}", "a number with a fraction"));
    problems.add(mustRefuse("{\"n\": 1e3}", "a number with an exponent"));
    problems.add(mustRefuse("{\"n\": NaN}", "NaN"));
    problems.add(mustRefuse("{\"a\": 1,}", "a trailing comma"));
    problems.add(mustRefuse("{\"a\": 1} // c", "a comment"));
    problems.add(mustRefuse("{\"a\": 1} {}", "text after the value"));
    problems.add(keepsDigits("{\"seq\": 9007199254740993}", "9007199254740993"));
    // The subset rule (FORMAT.md), on the cases tests/conformance/test_conformance.py pins for Python.
    problems.add(subset("{\"seq\": 2}", "{\"seq\": \"2\"}", null));
    problems.add(
        subset("{\"duplicate\": false, \"n\": 0, \"s\": \"\", \"l\": [], \"m\": {}, \"z\": \"0\"}", "{}", null));
    problems.add(subset("{\"pending\": null}", "{}", null));
    problems.add(subset("{\"at\": \"${any}\"}", "{\"at\": \"\"}", null));
    problems.add(subset("{\"a\": [{\"b\": 1}]}", "{\"a\": [{\"b\": 1, \"c\": 2}], \"d\": 3}", null));
    problems.add(subset("{\"seq\": 2}", "{\"seq\": \"3\"}", "at seq: expected 2, actual \"3\""));
    problems.add(subset("{\"seq\": 2}", "{}", "at seq: expected 2, actual absent"));
    problems.add(subset("{\"ok\": true}", "{\"ok\": 1}", "at ok: expected true, actual 1"));
    problems.add(subset("{\"pending\": null}", "{\"pending\": {}}", "at pending: expected null, actual {}"));
    problems.add(subset("{\"at\": \"${any}\"}", "{}", "at at: expected \"${any}\", actual absent"));
    problems.add(subset("{\"a\": [1]}", "{\"a\": [1, 2]}", "at a: expected [1], actual [1,2]"));
    problems.add(subset("{\"a\": [{\"b\": 1}]}", "{\"a\": [{\"b\": 2}]}", "at a.0.b: expected 1, actual 2"));
    return problems;
  }

  /** Replays a deliberately wrong scenario: it must fail with every one of `words` in the message. */
  private static String mustFail(Config config, Path path, List<String> words) throws Exception {
    Scenario scenario = Scenario.load(path);
    int ran = 0;
    for (Config.Server server : config.servers()) {
      if (!scenario.appliesTo(server)) {
        continue;
      }
      ran++;
      try (Replayer replayer = new Replayer(server, config.tokens())) {
        replayer.replay(scenario);
        return "self-test " + scenario.name() + " on " + server.name() + ": the replay passed";
      } catch (Mismatch e) {
        for (String word : words) {
          if (!e.getMessage().contains(word)) {
            return "self-test " + scenario.name() + ": the failure \"" + e.getMessage()
                + "\" does not name \"" + word + "\"";
          }
        }
        System.out.printf("self-test %s on %s: failed as expected: %s%n", scenario.name(), server.name(), e.getMessage());
      }
    }
    return ran == 0 ? "self-test " + scenario.name() + ": no server to replay it on" : null;
  }

  private static String mustRefuse(String json, String what) {
    try {
      ScenarioText.parse(json.getBytes(StandardCharsets.UTF_8), "(self-test)");
      return "self-test: " + what + " was read, not refused";
    } catch (IOException e) {
      System.out.printf("self-test: %s refused as expected: %s%n", what, e.getMessage());
      return null;
    }
  }

  private static String keepsDigits(String json, String digits) throws IOException {
    String read = Json.show(ScenarioText.parse(json.getBytes(StandardCharsets.UTF_8), "(self-test)"));
    return read.contains(digits) ? null : "self-test: " + json + " was read as " + read;
  }

  /** expected against actual by the subset rule: null when the outcome is `mismatch` (null: a match). */
  private static String subset(String expected, String actual, String mismatch) throws IOException {
    byte[] e = expected.getBytes(StandardCharsets.UTF_8);
    byte[] a = actual.getBytes(StandardCharsets.UTF_8);
    String got = null;
    try {
      Subset.match(ScenarioText.parse(e, "(self-test)"), ScenarioText.parse(a, "(self-test)"), "");
    } catch (Mismatch m) {
      got = m.getMessage();
    }
    if (mismatch == null ? got == null : mismatch.equals(got)) {
      return null;
    }
    return "self-test: the subset rule on " + expected + " against " + actual + " gave "
        + (got == null ? "a match" : Json.show(got)) + ", not " + (mismatch == null ? "a match" : Json.show(mismatch));
  }
}
