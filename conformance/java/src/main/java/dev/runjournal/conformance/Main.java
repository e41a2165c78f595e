package dev.runjournal.conformance;

import java.io.IOException;
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
    for (String problem : SelfTests.run(config, Path.of(args[0]))) {
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
}
