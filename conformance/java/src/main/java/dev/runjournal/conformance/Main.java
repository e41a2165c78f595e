package dev.runjournal.conformance;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Stream;

/**
 * The Java conformance runner: replays every scenario of the conformance file's scenarios_dir on
 * every server it applies to (one thread per server, one JVM for all), checks that the runner
 * itself fails the self-test scenarios, and prints one summary line per server and a closing
 * "java: N passed, N failed, N skipped" line (skipped: a scenario whose `requires` excludes the
 * server). Exits 1 on any failure.
 *
 * <p>Usage: RUNJOURNAL_CONFORMANCE=file java ... dev.runjournal.conformance.Main SELFTEST_DIR
 */
public final class Main {
  private Main() {}

  /** One server's replays. */
  private record Tally(Config.Server server, int passed, List<String> failures, List<String> skipped) {}

  public static void main(String[] args) throws Exception {
    String file = System.getenv("RUNJOURNAL_CONFORMANCE");
    if (file == null || file.isEmpty() || args.length != 1) {
      System.err.println(
          "usage: RUNJOURNAL_CONFORMANCE=<file> java ... dev.runjournal.conformance.Main <selftest dir>"
              + " (run through conformance/servers.py; see conformance/java/run.sh)");
      System.exit(2);
    }
    Config config = Config.load(Path.of(file));
    List<String> failures = new ArrayList<>();
    List<Scenario> scenarios = new ArrayList<>();
    try (Stream<Path> files = Files.list(config.scenariosDir())) {
      for (Path path : files.filter(p -> p.toString().endsWith(".json")).sorted().toList()) {
        try {
          scenarios.add(Scenario.load(path));
        } catch (IOException e) {
          failures.add(e.getMessage()); // an error of the file, reported before any step runs
        }
      }
    }
    if (scenarios.isEmpty() && failures.isEmpty()) {
      failures.add("no scenarios in " + config.scenariosDir());
    }
    int passed = 0;
    int skipped = 0;
    if (failures.isEmpty()) {
      for (Tally tally : replayAll(config, scenarios)) {
        System.out.printf(
            "conformance java %s: %d/%d scenarios passed (%d not applicable)%n",
            tally.server().name(),
            tally.passed(),
            tally.passed() + tally.failures().size(),
            tally.skipped().size());
        passed += tally.passed();
        skipped += tally.skipped().size();
        failures.addAll(tally.failures());
      }
    }
    for (String problem : selfTests(config, Path.of(args[0]))) {
      if (problem == null) {
        passed++;
      } else {
        failures.add(problem);
      }
    }
    for (String failure : failures) {
      System.out.println("FAIL " + failure);
    }
    System.out.printf("java: %d passed, %d failed, %d skipped%n", passed, failures.size(), skipped);
    System.exit(failures.isEmpty() ? 0 : 1);
  }

  private static List<Tally> replayAll(Config config, List<Scenario> scenarios) throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(config.servers().size());
    try {
      List<Future<Tally>> running = new ArrayList<>();
      for (Config.Server server : config.servers()) {
        running.add(pool.submit(() -> replayOn(config, server, scenarios)));
      }
      List<Tally> tallies = new ArrayList<>();
      for (Future<Tally> f : running) {
        tallies.add(f.get());
      }
      return tallies;
    } finally {
      pool.shutdownNow();
    }
  }

  private static Tally replayOn(Config config, Config.Server server, List<Scenario> scenarios)
      throws InterruptedException {
    int passed = 0;
    List<String> failures = new ArrayList<>();
    List<String> skipped = new ArrayList<>();
    try (Replayer replayer = new Replayer(server, config.tokens())) {
      for (Scenario scenario : scenarios) {
        if (!scenario.appliesTo(server)) {
          skipped.add(scenario.name());
          continue;
        }
        try {
          replayer.replay(scenario);
          passed++;
        } catch (Mismatch e) {
          failures.add(e.getMessage());
        } catch (RuntimeException e) {
          failures.add("scenario " + scenario.name() + " on " + server.name() + ": " + e);
        }
      }
    }
    return new Tally(server, passed, failures, skipped);
  }

  /**
   * The runner's own checks (FORMAT.md "The runners' self-test" and "Reading a file"): each is
   * null when it held, else what went wrong.
   */
  private static List<String> selfTests(Config config, Path selftestDir) throws Exception {
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
    problems.add(keepsDigits("{\"seq\": 9007199254740993}", "9007199254740993"));
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
}
