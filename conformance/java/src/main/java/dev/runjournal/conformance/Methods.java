package dev.runjournal.conformance;

import com.google.protobuf.Message;
import io.grpc.MethodDescriptor;
import io.grpc.ServiceDescriptor;
import java.util.List;
import runjournal.v1.JournalServiceGrpc;
import runjournal.v1.TaskServiceGrpc;

/**
 * A step's rpc found among the generated stubs' method descriptors (protoc-gen-grpc-java), by its
 * full name or its short name (unique across the two services).
 */
final class Methods {
  private static final List<ServiceDescriptor> SERVICES =
      List.of(JournalServiceGrpc.getServiceDescriptor(), TaskServiceGrpc.getServiceDescriptor());

  private Methods() {}

  /** The method and the empty request message its marshaller parses into. */
  record Method(MethodDescriptor<Message, Message> descriptor, Message requestPrototype) {
    boolean serverStreaming() {
      return descriptor.getType() == MethodDescriptor.MethodType.SERVER_STREAMING;
    }
  }

  @SuppressWarnings("unchecked")
  static Method find(String rpc) throws Mismatch {
    String wanted = rpc.startsWith("/") ? rpc.substring(1) : rpc;
    for (ServiceDescriptor service : SERVICES) {
      for (MethodDescriptor<?, ?> m : service.getMethods()) {
        if (wanted.equals(m.getFullMethodName())
            || (!wanted.contains("/") && wanted.equals(m.getBareMethodName()))) {
          MethodDescriptor<Message, Message> typed = (MethodDescriptor<Message, Message>) m;
          Message prototype =
              ((MethodDescriptor.PrototypeMarshaller<Message>) typed.getRequestMarshaller())
                  .getMessagePrototype();
          return new Method(typed, prototype);
        }
      }
    }
    throw new Mismatch("unknown rpc " + Json.show(rpc));
  }
}
