package dev.runjournal.conformance;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonPrimitive;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** One scenario file (FORMAT.md "A scenario"), checked for the shape the format gives it. */
record Scenario(String name, String description, Boolean auth, List<String> backends, List<Step> steps) {

  /** One call: the request and expectation stay JSON until substitution. */
  record Step(
      String rpc,
      JsonObject request,
      JsonObject metadata,
      JsonObject expect,
      Map<String, String> save,
      During during) {}

  /** Steps replayed once `after` messages of the step's stream arrived (FORMAT.md "Concurrent steps"). */
  record During(int after, List<Step> steps) {}

  /** Whether the scenario replays on a server with that backend and auth setting. */
  boolean appliesTo(Config.Server server) {
    return (auth == null || auth == server.auth())
        && (backends == null || backends.contains(server.backend()));
  }

  static Scenario load(Path path) throws IOException {
    try {
      Scenario s = parse(ScenarioText.read(path));
      String file = path.getFileName().toString();
      if (!file.equals(s.name() + ".json")) {
        throw new Mismatch("the name " + Json.show(s.name()) + " is not the file's name");
      }
      return s;
    } catch (Mismatch e) {
      throw new IOException(path + ": " + e.getMessage(), e);
    }
  }

  private static Scenario parse(JsonElement value) throws Mismatch {
    JsonObject o = object(value, "the scenario");
    keys(o, "the scenario", "name", "description", "requires", "steps");
    String name = Json.string(o, "name");
    if (name == null || !name.matches("[a-z0-9_]+")) {
      throw new Mismatch("name must be [a-z0-9_]+");
    }
    String description = Json.string(o, "description");
    if (description == null || description.isEmpty()) {
      throw new Mismatch("no description");
    }
    Boolean auth = null;
    List<String> backends = null;
    if (o.has("requires")) {
      JsonObject requires = object(o.get("requires"), "requires");
      keys(requires, "requires", "auth", "backends");
      if (requires.has("auth")) {
        if (!(requires.get("auth").isJsonPrimitive() && requires.get("auth").getAsJsonPrimitive().isBoolean())) {
          throw new Mismatch("requires.auth must be a boolean");
        }
        auth = requires.get("auth").getAsBoolean();
      }
      if (requires.has("backends")) {
        backends = new ArrayList<>();
        for (JsonElement b : array(requires.get("backends"), "requires.backends")) {
          if (!List.of("file", "jetstream").contains(b.getAsString())) {
            throw new Mismatch("requires.backends: unknown backend " + Json.show(b));
          }
          backends.add(b.getAsString());
        }
      }
    }
    List<Step> steps = steps(o.get("steps"), "steps", true);
    return new Scenario(name, description, auth, backends, steps);
  }

  private static List<Step> steps(JsonElement value, String where, boolean mayHaveDuring)
      throws Mismatch {
    JsonArray array = array(value, where);
    if (array.isEmpty()) {
      throw new Mismatch(where + " is empty");
    }
    List<Step> steps = new ArrayList<>();
    for (int i = 0; i < array.size(); i++) {
      steps.add(step(array.get(i), where + "." + i, mayHaveDuring));
    }
    return steps;
  }

  private static Step step(JsonElement value, String where, boolean mayHaveDuring) throws Mismatch {
    JsonObject o = object(value, where);
    keys(o, where, "rpc", "request", "metadata", "expect", "save", "during");
    String rpc = Json.string(o, "rpc");
    if (rpc == null) {
      throw new Mismatch(where + ": no rpc");
    }
    JsonObject request = object(o.get("request"), where + ".request");
    JsonObject metadata = o.has("metadata") ? object(o.get("metadata"), where + ".metadata") : null;
    if (metadata != null) {
      keys(metadata, where + ".metadata", "token");
      String token = Json.string(metadata, "token");
      if (metadata.has("token") && !List.of("worker", "operator", "tenant", "none", "bad").contains(token)) {
        throw new Mismatch(where + ".metadata.token: unknown token " + Json.show(metadata.get("token")));
      }
    }
    JsonObject expect = object(o.get("expect"), where + ".expect");
    keys(expect, where + ".expect", "response", "stream", "error");
    if (expect.has("stream")) {
      JsonObject stream = object(expect.get("stream"), where + ".expect.stream");
      keys(stream, where + ".expect.stream", "items", "exact", "take");
      array(stream.get("items"), where + ".expect.stream.items");
      if (stream.has("exact") && stream.has("take")) {
        throw new Mismatch(where + ".expect.stream: take and exact do not go together");
      }
    }
    if (expect.has("error")) {
      JsonObject error = object(expect.get("error"), where + ".expect.error");
      keys(error, where + ".expect.error", "code", "reason", "metadata");
      String reason = Json.string(error, "reason");
      if (Json.string(error, "code") == null || reason == null || !reason.matches("[A-Z][A-Z_]*")) {
        throw new Mismatch(where + ".expect.error: a code and a reason [A-Z][A-Z_]* are required");
      }
    }
    int kinds = 0;
    for (String kind : List.of("response", "stream", "error")) {
      kinds += expect.has(kind) ? 1 : 0;
    }
    if (kinds != 1) {
      throw new Mismatch(where + ".expect: exactly one of response, stream, error");
    }
    Map<String, String> save = new LinkedHashMap<>();
    if (o.has("save")) {
      if (expect.has("error")) {
        throw new Mismatch(where + ": save on a step that expects an error");
      }
      for (Map.Entry<String, JsonElement> e : object(o.get("save"), where + ".save").entrySet()) {
        if (!e.getKey().matches("[A-Za-z0-9_]+")) {
          throw new Mismatch(where + ".save: the name " + Json.show(e.getKey()) + " is not [A-Za-z0-9_]+");
        }
        save.put(e.getKey(), e.getValue().getAsString());
      }
    }
    During during = null;
    if (o.has("during")) {
      if (!mayHaveDuring) {
        throw new Mismatch(where + ": a step of during has no during of its own");
      }
      JsonObject d = object(o.get("during"), where + ".during");
      keys(d, where + ".during", "after", "steps");
      if (!(d.get("after") instanceof JsonPrimitive after && after.isNumber() && after.getAsInt() >= 1)) {
        throw new Mismatch(where + ".during.after must be an integer >= 1");
      }
      during =
          new During(
              d.get("after").getAsInt(), steps(d.get("steps"), where + ".during.steps", false));
    }
    return new Step(rpc, request, metadata, expect, save, during);
  }

  /** The schema's additionalProperties: false (format.schema.json). */
  private static void keys(JsonObject o, String where, String... allowed) throws Mismatch {
    for (String key : o.keySet()) {
      if (!List.of(allowed).contains(key)) {
        throw new Mismatch(where + ": unknown key " + Json.show(key));
      }
    }
  }

  private static JsonObject object(JsonElement value, String where) throws Mismatch {
    if (!(value instanceof JsonObject o)) {
      throw new Mismatch(where + " must be an object");
    }
    return o;
  }

  private static JsonArray array(JsonElement value, String where) throws Mismatch {
    if (!(value instanceof JsonArray a)) {
      throw new Mismatch(where + " must be an array");
    }
    return a;
  }
}
