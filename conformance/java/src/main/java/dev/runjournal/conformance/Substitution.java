package dev.runjournal.conformance;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonPrimitive;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * FORMAT.md "Substitution": ${run} and ${save.NAME} in every string; a string that is exactly one
 * placeholder becomes the saved value with its type; ${any} stays (it is the matcher).
 */
final class Substitution {
  private static final Pattern PLACEHOLDER = Pattern.compile("\\$\\{([^}]*)\\}");

  private Substitution() {}

  /** A copy of value with every placeholder replaced from vars ("run", "save.NAME"). */
  static JsonElement apply(JsonElement value, Map<String, JsonElement> vars) throws Mismatch {
    if (value instanceof JsonObject object) {
      JsonObject out = new JsonObject();
      for (Map.Entry<String, JsonElement> entry : object.entrySet()) {
        out.add(entry.getKey(), apply(entry.getValue(), vars));
      }
      return out;
    }
    if (value instanceof JsonArray array) {
      JsonArray out = new JsonArray();
      for (JsonElement item : array) {
        out.add(apply(item, vars));
      }
      return out;
    }
    if (value == null || !value.isJsonPrimitive() || !value.getAsJsonPrimitive().isString()) {
      return value;
    }
    String text = value.getAsString();
    Matcher whole = PLACEHOLDER.matcher(text);
    if (whole.matches()) {
      return whole.group(1).equals("any") ? value : lookup(vars, whole.group(1));
    }
    Matcher m = PLACEHOLDER.matcher(text);
    StringBuilder out = new StringBuilder();
    while (m.find()) {
      String name = m.group(1);
      String replacement = name.equals("any") ? m.group() : text(lookup(vars, name));
      m.appendReplacement(out, Matcher.quoteReplacement(replacement));
    }
    m.appendTail(out);
    return new JsonPrimitive(out.toString());
  }

  private static JsonElement lookup(Map<String, JsonElement> vars, String name) throws Mismatch {
    JsonElement value =
        name.equals("run") || name.startsWith("save.") ? vars.get(name) : null;
    if (value == null) {
      throw new Mismatch("unknown placeholder ${" + name + "}");
    }
    return value;
  }

  /** A value inside a longer string: a string as is, a number in its decimal digits. */
  private static String text(JsonElement value) {
    if (value.isJsonPrimitive()) {
      return value.getAsString();
    }
    return Json.show(value);
  }
}
