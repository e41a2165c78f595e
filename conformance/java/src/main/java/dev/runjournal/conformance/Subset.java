package dev.runjournal.conformance;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonPrimitive;
import java.math.BigDecimal;
import java.util.Map;

/** The subset rule of FORMAT.md: an expected JSON value against the actual one. */
final class Subset {
  static final String ANY = "${any}";

  private Subset() {}

  /**
   * Matches expected against actual (null: absent). The mismatch names the path, the expected and
   * the actual value.
   */
  static void match(JsonElement expected, JsonElement actual, String path) throws Mismatch {
    if (actual != null && actual.isJsonNull()) {
      actual = null;
    }
    if (expected == null || expected.isJsonNull()) {
      if (actual != null) {
        throw fail(expected, actual, path);
      }
      return;
    }
    if (isAny(expected)) {
      if (actual == null) {
        throw fail(expected, null, path);
      }
      return;
    }
    if (actual == null) {
      if (!isDefault(expected)) {
        throw fail(expected, null, path);
      }
      return;
    }
    if (expected instanceof JsonObject object) {
      if (!(actual instanceof JsonObject got)) {
        throw fail(expected, actual, path);
      }
      for (Map.Entry<String, JsonElement> entry : object.entrySet()) {
        match(entry.getValue(), got.get(entry.getKey()), join(path, entry.getKey()));
      }
    } else if (expected instanceof JsonArray array) {
      if (!(actual instanceof JsonArray got) || got.size() != array.size()) {
        throw fail(expected, actual, path);
      }
      for (int i = 0; i < array.size(); i++) {
        match(array.get(i), got.get(i), join(path, Integer.toString(i)));
      }
    } else if (expected.getAsJsonPrimitive().isNumber()) {
      if (!numberMatches(expected.getAsJsonPrimitive(), actual)) {
        throw fail(expected, actual, path);
      }
    } else if (!expected.equals(actual)) {
      throw fail(expected, actual, path);
    }
  }

  private static boolean isAny(JsonElement e) {
    return e.isJsonPrimitive() && e.getAsJsonPrimitive().isString() && e.getAsString().equals(ANY);
  }

  /** proto3 JSON omits defaults: false, 0, "0", "", [] and {} match an absent value. */
  private static boolean isDefault(JsonElement e) {
    if (e instanceof JsonObject o) {
      return o.size() == 0;
    }
    if (e instanceof JsonArray a) {
      return a.size() == 0;
    }
    JsonPrimitive p = e.getAsJsonPrimitive();
    if (p.isBoolean()) {
      return !p.getAsBoolean();
    }
    if (p.isNumber()) {
      return decimal(p.getAsString()).signum() == 0;
    }
    return p.getAsString().isEmpty() || p.getAsString().equals("0");
  }

  /** A number matches an equal number, or the string of its decimal form (how int64 is written). */
  private static boolean numberMatches(JsonPrimitive expected, JsonElement actual) {
    if (!actual.isJsonPrimitive()) {
      return false;
    }
    JsonPrimitive got = actual.getAsJsonPrimitive();
    BigDecimal want = decimal(expected.getAsString());
    if (got.isNumber()) {
      return want.compareTo(decimal(got.getAsString())) == 0;
    }
    if (got.isString()) {
      String text = got.getAsString();
      return text.equals(expected.getAsString())
          || text.equals(want.stripTrailingZeros().toPlainString());
    }
    return false;
  }

  private static BigDecimal decimal(String digits) {
    return new BigDecimal(digits);
  }

  private static String join(String path, String key) {
    return path.isEmpty() ? key : path + "." + key;
  }

  private static Mismatch fail(JsonElement expected, JsonElement actual, String path) {
    return new Mismatch(
        "at "
            + (path.isEmpty() ? "(root)" : path)
            + ": expected "
            + Json.show(expected == null ? com.google.gson.JsonNull.INSTANCE : expected)
            + ", actual "
            + Json.show(actual));
  }
}
