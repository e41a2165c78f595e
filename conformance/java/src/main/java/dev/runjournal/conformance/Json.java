package dev.runjournal.conformance;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonNull;
import com.google.gson.JsonObject;
import com.google.gson.JsonPrimitive;

/** Small helpers over Gson's tree: showing a value, walking a save path. */
final class Json {
  private static final Gson GSON = new GsonBuilder().disableHtmlEscaping().serializeNulls().create();

  private Json() {}

  /** The value as compact JSON text (numbers with the digits they were read with). */
  static String show(JsonElement value) {
    return value == null ? "absent" : GSON.toJson(value);
  }

  static String show(String value) {
    return GSON.toJson(new JsonPrimitive(value));
  }

  /** The value at a dot-separated path of object keys and array indexes, or null. */
  static JsonElement at(JsonElement value, String path) {
    if (path.isEmpty()) {
      return value;
    }
    for (String part : path.split("\\.", -1)) {
      if (value instanceof JsonObject object) {
        value = object.get(part);
      } else if (value instanceof JsonArray array && part.matches("[0-9]+")) {
        int i = Integer.parseInt(part);
        value = i < array.size() ? array.get(i) : null;
      } else {
        return null;
      }
      if (value == null) {
        return null;
      }
    }
    return value instanceof JsonNull ? null : value;
  }

  /** A string member of an object, or null. */
  static String string(JsonObject object, String key) {
    JsonElement value = object.get(key);
    return value != null && value.isJsonPrimitive() && value.getAsJsonPrimitive().isString()
        ? value.getAsString()
        : null;
  }
}
