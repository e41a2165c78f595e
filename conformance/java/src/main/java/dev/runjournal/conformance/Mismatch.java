package dev.runjournal.conformance;

/** A step's answer differs from its expectation (or the step cannot be run); the message says where. */
final class Mismatch extends Exception {
  Mismatch(String message) {
    super(message);
  }

  /**
   * The same mismatch with a prefix naming where it happened: "step 3 (Watch), during step 0
   * (Append): ..." for a step of during (FORMAT.md "Concurrent steps"), else "where: ...".
   */
  Mismatch within(String where) {
    String separator = getMessage().startsWith("during step ") ? ", " : ": ";
    return new Mismatch(where + separator + getMessage());
  }
}
