package dev.runjournal.conformance;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import com.google.gson.JsonPrimitive;
import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.protobuf.Message;
import com.google.protobuf.util.JsonFormat;
import com.google.rpc.ErrorInfo;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientInterceptors;
import io.grpc.Context;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.grpc.netty.NettyChannelBuilder;
import io.grpc.protobuf.StatusProto;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.MetadataUtils;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Replays scenarios against one server of the conformance file with the generated method
 * descriptors, ClientCalls and JsonFormat: nothing of a runjournal client.
 */
final class Replayer implements AutoCloseable {
  private static final String DOMAIN = "runjournal.dev";
  private static final long CALL_SECONDS = 10;
  private static final Metadata.Key<String> AUTHORIZATION =
      Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);
  private static final SecureRandom RANDOM = new SecureRandom();

  private final Config.Server server;
  private final Map<String, String> tokens;
  private final ManagedChannel channel;

  Replayer(Config.Server server, Map<String, String> tokens) {
    this.server = server;
    this.tokens = tokens;
    this.channel = NettyChannelBuilder.forTarget(server.address()).usePlaintext().build();
  }

  @Override
  public void close() throws InterruptedException {
    channel.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
  }

  /** Runs every step; the mismatch names the scenario, the server, the step and what differed. */
  void replay(Scenario scenario) throws Mismatch {
    Map<String, JsonElement> vars = new ConcurrentHashMap<>();
    vars.put("run", new JsonPrimitive("cf-" + HexFormat.of().formatHex(randomBytes())));
    List<Scenario.Step> steps = scenario.steps();
    for (int i = 0; i < steps.size(); i++) {
      Scenario.Step step = steps.get(i);
      try {
        step(vars, step);
      } catch (Mismatch e) {
        throw e.within(
            "scenario " + scenario.name() + " on " + server.name() + ", step " + i + " (" + step.rpc() + ")");
      }
    }
  }

  private static byte[] randomBytes() {
    byte[] b = new byte[8];
    RANDOM.nextBytes(b);
    return b;
  }

  /** What a call gave: the response (a stream's: the array of its messages) or its failure. */
  private record Outcome(JsonElement actual, StatusRuntimeException error) {}

  private void step(Map<String, JsonElement> vars, Scenario.Step step) throws Mismatch {
    Methods.Method method = Methods.find(step.rpc());
    JsonObject request = Substitution.apply(step.request(), vars).getAsJsonObject();
    JsonObject expect = Substitution.apply(step.expect(), vars).getAsJsonObject();
    Message.Builder builder = method.requestPrototype().newBuilderForType();
    try {
      JsonFormat.parser().merge(Json.show(request), builder);
    } catch (InvalidProtocolBufferException e) {
      throw new Mismatch("request: " + e.getMessage());
    }
    Channel channel = channelFor(step, vars);
    int take = take(expect);
    Outcome outcome =
        method.serverStreaming()
            ? stream(channel, method, builder.build(), take, step.during(), vars)
            : unary(channel, method, builder.build());
    if (expect.has("error")) {
      if (outcome.error() == null) {
        throw new Mismatch(
            "at error: expected " + Json.show(expect.get("error")) + ", actual success " + Json.show(outcome.actual()));
      }
      matchError(expect.get("error"), outcome.error());
      return;
    }
    if (outcome.error() != null) {
      throw new Mismatch("at response: expected success, actual error " + describe(outcome.error()));
    }
    if (expect.has("response")) {
      Subset.match(expect.get("response"), outcome.actual(), "");
    } else {
      matchStream(expect.getAsJsonObject("stream"), outcome.actual().getAsJsonArray());
    }
    for (Map.Entry<String, String> save : step.save().entrySet()) {
      JsonElement value = Json.at(outcome.actual(), save.getValue());
      if (value == null) {
        throw new Mismatch(
            "save " + save.getKey() + ": nothing at " + save.getValue() + " in " + Json.show(outcome.actual()));
      }
      vars.put("save." + save.getKey(), value);
    }
  }

  /** The channel with the step's bearer token when the server has auth on (FORMAT.md "metadata"). */
  private Channel channelFor(Scenario.Step step, Map<String, JsonElement> vars) throws Mismatch {
    if (!server.auth()) {
      return channel;
    }
    String which = "worker";
    if (step.metadata() != null) {
      JsonObject metadata = Substitution.apply(step.metadata(), vars).getAsJsonObject();
      String named = Json.string(metadata, "token");
      if (named != null) {
        which = named;
      }
    }
    if (which.equals("none")) {
      return channel;
    }
    String token = tokens.get(which);
    if (token == null) {
      throw new Mismatch("unknown token " + Json.show(which));
    }
    Metadata headers = new Metadata();
    headers.put(AUTHORIZATION, "Bearer " + token);
    return ClientInterceptors.intercept(channel, MetadataUtils.newAttachHeadersInterceptor(headers));
  }

  private static CallOptions options() {
    return CallOptions.DEFAULT.withDeadlineAfter(CALL_SECONDS, TimeUnit.SECONDS);
  }

  private Outcome unary(Channel channel, Methods.Method method, Message request) {
    try {
      return new Outcome(
          toJson(ClientCalls.blockingUnaryCall(channel, method.descriptor(), options(), request)), null);
    } catch (StatusRuntimeException e) {
      return new Outcome(null, e);
    }
  }

  /**
   * Reads the stream to its end, or with take > 0 its first take messages and then cancels it
   * (Watch and WatchRuns never end by themselves). During's steps run on this thread once `after`
   * messages arrived, while the stream stays open. A failure before the first message is the call's.
   */
  private Outcome stream(
      Channel channel,
      Methods.Method method,
      Message request,
      int take,
      Scenario.During during,
      Map<String, JsonElement> vars)
      throws Mismatch {
    if (during != null && (take == 0 || during.after() < 1 || during.after() >= take)) {
      throw new Mismatch("during needs expect.stream.take, and 1 <= during.after < take");
    }
    JsonArray items = new JsonArray();
    // The call is bound to this context: cancelling it cancels the call (the way to stop a
    // blocking stream in grpc-java).
    Context.CancellableContext call = Context.current().withCancellation();
    try {
      Iterator<Message> messages;
      Context previous = call.attach();
      try {
        messages = ClientCalls.blockingServerStreamingCall(channel, method.descriptor(), options(), request);
      } finally {
        call.detach(previous);
      }
      while (take == 0 || items.size() < take) {
        boolean more;
        try {
          more = messages.hasNext();
        } catch (StatusRuntimeException e) {
          if (take > 0 && items.size() > 0) {
            throw takeCut(take, "failed " + e.getStatus().getCode().name(), items);
          }
          return new Outcome(items, e);
        }
        if (!more) {
          if (take > 0) {
            throw takeCut(take, "ended", items);
          }
          break;
        }
        items.add(toJson(messages.next()));
        if (during != null && items.size() == during.after()) {
          runDuring(during, vars);
        }
      }
      return new Outcome(items, null);
    } finally {
      call.cancel(null);
    }
  }

  private void runDuring(Scenario.During during, Map<String, JsonElement> vars) throws Mismatch {
    List<Scenario.Step> steps = during.steps();
    for (int i = 0; i < steps.size(); i++) {
      try {
        step(vars, steps.get(i));
      } catch (Mismatch e) {
        throw e.within("during step " + i + " (" + steps.get(i).rpc() + ")");
      }
    }
  }

  private static Mismatch takeCut(int take, String why, JsonArray taken) {
    return new Mismatch(
        "expected " + take + " stream messages before cancelling, the stream " + why + " after "
            + taken.size() + ": " + Json.show(taken));
  }

  /** expect.stream.take, 0 when absent. */
  private static int take(JsonObject expect) throws Mismatch {
    JsonObject stream = expect.has("stream") ? expect.getAsJsonObject("stream") : null;
    if (stream == null || !stream.has("take")) {
      return 0;
    }
    int take = stream.get("take").getAsInt();
    if (take < 1) {
      throw new Mismatch("expect.stream.take must be at least 1");
    }
    if (stream.has("exact")) {
      throw new Mismatch("expect.stream: take and exact do not go together");
    }
    return take;
  }

  private static void matchStream(JsonObject want, JsonArray got) throws Mismatch {
    JsonArray items = want.has("items") ? want.getAsJsonArray("items") : new JsonArray();
    boolean exact = want.has("exact") && want.get("exact").getAsBoolean();
    if (want.has("take") && want.get("take").getAsInt() < items.size()) {
      throw new Mismatch(
          "at stream: expect.stream.take " + want.get("take") + " is fewer than its " + items.size() + " items");
    }
    if (got.size() < items.size() || (exact && got.size() != items.size())) {
      throw new Mismatch(
          "at stream: expected " + items.size() + " items (exact " + exact + "), actual " + got.size()
              + ": " + Json.show(got));
    }
    for (int i = 0; i < items.size(); i++) {
      Subset.match(items.get(i), got.get(i), Integer.toString(i));
    }
  }

  private static void matchError(JsonElement wanted, StatusRuntimeException error) throws Mismatch {
    JsonObject want = wanted.getAsJsonObject();
    String code = error.getStatus().getCode().name();
    if (want.has("code") && !want.get("code").equals(new JsonPrimitive(code))) {
      throw new Mismatch(
          "at error.code: expected " + Json.show(want.get("code")) + ", actual " + Json.show(code)
              + " (" + describe(error) + ")");
    }
    ErrorInfo info = errorInfo(error);
    if (want.has("reason")) {
      if (info == null) {
        throw new Mismatch(
            "at error.reason: expected " + Json.show(want.get("reason")) + ", actual no ErrorInfo ("
                + describe(error) + ")");
      }
      if (!info.getDomain().equals(DOMAIN)) {
        throw new Mismatch(
            "at error.domain: expected \"" + DOMAIN + "\", actual " + Json.show(info.getDomain()));
      }
      if (!want.get("reason").equals(new JsonPrimitive(info.getReason()))) {
        throw new Mismatch(
            "at error.reason: expected " + Json.show(want.get("reason")) + ", actual "
                + Json.show(info.getReason()) + " (" + describe(error) + ")");
      }
    }
    if (want.has("metadata")) {
      JsonObject got = new JsonObject();
      if (info != null) {
        info.getMetadataMap().forEach(got::addProperty);
      }
      Subset.match(want.get("metadata"), got, "error.metadata");
    }
  }

  /** The ErrorInfo detail of grpc-status-details-bin, or null. */
  private static ErrorInfo errorInfo(StatusRuntimeException error) {
    com.google.rpc.Status status = StatusProto.fromThrowable(error);
    if (status == null) {
      return null;
    }
    ErrorInfo found = null;
    for (Any detail : status.getDetailsList()) {
      if (detail.is(ErrorInfo.class)) {
        try {
          found = detail.unpack(ErrorInfo.class);
        } catch (InvalidProtocolBufferException e) {
          return null;
        }
      }
    }
    return found;
  }

  private static String describe(StatusRuntimeException error) {
    ErrorInfo info = errorInfo(error);
    String reason = info == null ? "" : info.getReason();
    Map<String, String> metadata = info == null ? Map.of() : new TreeMap<>(info.getMetadataMap());
    return error.getStatus().getCode().name() + " " + reason + " " + metadata + ": "
        + error.getStatus().getDescription();
  }

  /** The message as proto3 JSON with JsonFormat's defaults (FORMAT.md "The subset rule"). */
  private static JsonElement toJson(Message message) {
    try {
      return JsonParser.parseString(JsonFormat.printer().print(message));
    } catch (InvalidProtocolBufferException e) {
      throw new IllegalStateException("a response JsonFormat cannot print: " + e.getMessage(), e);
    }
  }
}
