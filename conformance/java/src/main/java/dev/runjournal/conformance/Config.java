package dev.runjournal.conformance;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** The conformance file conformance/servers.py writes (FORMAT.md "Servers"). */
record Config(Path scenariosDir, List<Server> servers, Map<String, String> tokens) {

  /** One server of the file. */
  record Server(String name, String backend, boolean auth, String address) {}

  static Config load(Path path) throws IOException {
    JsonObject o = ScenarioText.read(path).getAsJsonObject();
    List<Server> servers = new ArrayList<>();
    for (JsonElement e : o.getAsJsonArray("servers")) {
      JsonObject s = e.getAsJsonObject();
      servers.add(
          new Server(
              s.get("name").getAsString(),
              s.get("backend").getAsString(),
              s.get("auth").getAsBoolean(),
              s.get("address").getAsString()));
    }
    Map<String, String> tokens = new LinkedHashMap<>();
    for (Map.Entry<String, JsonElement> e : o.getAsJsonObject("tokens").entrySet()) {
      tokens.put(e.getKey(), e.getValue().getAsString());
    }
    return new Config(Path.of(o.get("scenarios_dir").getAsString()), servers, tokens);
  }
}
