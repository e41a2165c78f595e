package dev.runjournal.conformance;

/** A step's answer differs from its expectation (or the step cannot be run); the message says where. */
final class Mismatch extends Exception {
  Mismatch(String message) {
    super(message);
  }

  /** The same mismatch with a prefix naming where it happened. */
  Mismatch within(String where) {
    return new Mismatch(where + ": " + getMessage());
  }
}
