package dev.runjournal.conformance;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import com.google.gson.Strictness;
import com.google.gson.stream.JsonReader;
import com.google.gson.stream.JsonToken;
import com.google.gson.stream.MalformedJsonException;
import java.io.IOException;
import java.io.StringReader;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * Reads a JSON file the way FORMAT.md ("Reading a file") asks: the bytes must be UTF-8, every
 * string (key or value) valid UTF-16, and every number keeps its digits. Gson is strict here and
 * keeps a number as the text it was written with (LazilyParsedNumber), so an int64 beyond 2^53 is
 * sent as written; Java strings are UTF-16, so a lone surrogate escape survives parsing and is
 * refused instead of silently becoming U+FFFD.
 */
final class ScenarioText {
  private ScenarioText() {}

  /** The file's JSON value; an IOException names what is wrong with it. */
  static JsonElement read(Path path) throws IOException {
    return parse(Files.readAllBytes(path), path.toString());
  }

  /** The JSON value of bytes read from `path` (named in the IOException). */
  static JsonElement parse(byte[] bytes, String path) throws IOException {
    String text;
    try {
      text =
          StandardCharsets.UTF_8
              .newDecoder()
              .onMalformedInput(CodingErrorAction.REPORT)
              .onUnmappableCharacter(CodingErrorAction.REPORT)
              .decode(ByteBuffer.wrap(bytes))
              .toString();
    } catch (CharacterCodingException e) {
      throw new IOException(path + ": not UTF-8 (FORMAT.md, \"Strings\")", e);
    }
    JsonReader reader = new JsonReader(new StringReader(text));
    reader.setStrictness(Strictness.STRICT);
    JsonElement value;
    try {
      value = JsonParser.parseReader(reader);
      if (reader.peek() != JsonToken.END_DOCUMENT) {
        throw new IOException(path + ": text after the JSON value");
      }
    } catch (RuntimeException | MalformedJsonException e) {
      throw new IOException(path + ": not JSON: " + e.getMessage(), e);
    }
    try {
      JsonReader strict = new JsonReader(new StringReader(text));
      strict.setStrictness(Strictness.STRICT);
      refuseWhatStrictJsonForbids(strict);
    } catch (IOException e) {
      throw new IOException(path + ": " + e.getMessage() + " (FORMAT.md, \"Strict JSON\")", e);
    }
    String bad = firstInvalidString(value);
    if (bad != null) {
      throw new IOException(
          path + ": the string \"" + escaped(bad) + "\" is not valid UTF-16 (FORMAT.md, \"Strings\")");
    }
    return value;
  }

  /**
   * Walks one value refusing what FORMAT.md ("Strict JSON") forbids and Gson's tree lets through:
   * a key twice in one object (the tree keeps the last) and a number with a fraction or exponent.
   */
  private static void refuseWhatStrictJsonForbids(JsonReader reader) throws IOException {
    switch (reader.peek()) {
      case BEGIN_OBJECT -> {
        reader.beginObject();
        Set<String> seen = new HashSet<>();
        while (reader.hasNext()) {
          String key = reader.nextName();
          if (!seen.add(key)) {
            throw new IOException("the key \"" + escaped(key) + "\" appears twice in one object");
          }
          refuseWhatStrictJsonForbids(reader);
        }
        reader.endObject();
      }
      case BEGIN_ARRAY -> {
        reader.beginArray();
        while (reader.hasNext()) {
          refuseWhatStrictJsonForbids(reader);
        }
        reader.endArray();
      }
      case NUMBER -> {
        String number = reader.nextString();
        if (!number.matches("-?[0-9]+")) {
          throw new IOException("the number " + number + " is not an integer written in plain digits");
        }
      }
      default -> reader.skipValue();
    }
  }

  /** The first key or string value holding a lone surrogate, or null. */
  static String firstInvalidString(JsonElement value) {
    if (value instanceof JsonObject object) {
      for (Map.Entry<String, JsonElement> entry : object.entrySet()) {
        if (!validUtf16(entry.getKey())) {
          return entry.getKey();
        }
        String bad = firstInvalidString(entry.getValue());
        if (bad != null) {
          return bad;
        }
      }
    } else if (value instanceof JsonArray array) {
      for (JsonElement item : array) {
        String bad = firstInvalidString(item);
        if (bad != null) {
          return bad;
        }
      }
    } else if (value.isJsonPrimitive() && value.getAsJsonPrimitive().isString()) {
      String s = value.getAsString();
      return validUtf16(s) ? null : s;
    }
    return null;
  }

  /** The string with every surrogate and control character as a \\uXXXX escape, to show it. */
  static String escaped(String s) {
    StringBuilder out = new StringBuilder();
    for (char c : s.toCharArray()) {
      out.append(
          Character.isSurrogate(c) || c < 0x20 || c == '"' || c == '\\'
              ? String.format("\\u%04x", (int) c)
              : String.valueOf(c));
    }
    return out.toString();
  }

  /** Every high surrogate is followed by a low one, and no low one stands alone. */
  static boolean validUtf16(String s) {
    for (int i = 0; i < s.length(); i++) {
      char c = s.charAt(i);
      if (Character.isHighSurrogate(c)) {
        if (i + 1 >= s.length() || !Character.isLowSurrogate(s.charAt(i + 1))) {
          return false;
        }
        i++;
      } else if (Character.isLowSurrogate(c)) {
        return false;
      }
    }
    return true;
  }
}
