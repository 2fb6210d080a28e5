package io.simhashindex.example;

import com.google.protobuf.Any;
import com.google.protobuf.InvalidProtocolBufferException;
import com.google.rpc.BadRequest;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.StatusRuntimeException;
import io.grpc.protobuf.StatusProto;
import io.simhashindex.v1.DeduplicateRequest;
import io.simhashindex.v1.DeduplicateResponse;
import io.simhashindex.v1.DeleteRequest;
import io.simhashindex.v1.Hit;
import io.simhashindex.v1.IndexBatchRequest;
import io.simhashindex.v1.IndexBatchResponse;
import io.simhashindex.v1.IndexOutcome;
import io.simhashindex.v1.IndexRequest;
import io.simhashindex.v1.IndexResponse;
import io.simhashindex.v1.QueryRequest;
import io.simhashindex.v1.QueryResponse;
import io.simhashindex.v1.SimHashIndexGrpc;
import io.simhashindex.v1.Verification;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * A Java service calling simhash-index: it indexes a document, deduplicates a repost of it, queries by text
 * with verification, indexes a batch with one bad document in it, and reads the field violations of a
 * refused call with grpc-java's {@link StatusProto}.  Run against a server:
 *
 * <pre>java -jar target/simhash-index-example.jar 127.0.0.1:50051 [id-prefix]</pre>
 *
 * <p>It prints one line per step and exits non-zero if the server does not answer as documented.
 */
public final class Example {
  private Example() {}

  public static void main(String[] args) throws InterruptedException {
    String target = args.length > 0 ? args[0] : "127.0.0.1:50051";
    String prefix = args.length > 1 ? args[1] : "java-example-";
    ManagedChannel channel = Grpc.newChannelBuilder(target, InsecureChannelCredentials.create()).build();
    try {
      run(SimHashIndexGrpc.newBlockingStub(channel), prefix);
    } catch (IllegalStateException | StatusRuntimeException e) {
      System.err.println("error: " + e.getMessage());
      System.exit(1);
    } finally {
      channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
    }
  }

  private static void run(SimHashIndexGrpc.SimHashIndexBlockingStub stub, String prefix) {
    // Each call gets its own deadline: a stub's withDeadlineAfter fixes one instant for every call made on it.
    String article = "近似重复检测把一篇文章变成六十四位的指纹，再在索引里找汉明距离不超过三的指纹。".repeat(12);
    IndexResponse indexed = calls(stub).index(
        IndexRequest.newBuilder().setDocId(prefix + "1").setText(article).build());
    System.out.printf("indexed %s %016x%n", indexed.getDocId(), indexed.getSimhash());

    String repost = article + "（本文转载自技术博客）";
    DeduplicateResponse dedup = calls(stub).deduplicate(
        DeduplicateRequest.newBuilder().setDocId(prefix + "2").setText(repost).build());
    if (dedup.getStored() || dedup.getHitsCount() == 0 || !dedup.getHits(0).getDocId().equals(prefix + "1")) {
      throw new IllegalStateException("Deduplicate stored the repost or named another document: " + dedup);
    }
    System.out.printf(Locale.ROOT, "duplicate of %s (similarity %.2f)%n", dedup.getHits(0).getDocId(),
        dedup.getHits(0).getSimilarity());

    QueryResponse found = calls(stub).query(
        QueryRequest.newBuilder().setText(article).setMinSimilarity(0.9).build());
    if (found.getHitsCount() == 0 || found.getHits(0).getVerification() != Verification.VERIFICATION_VERIFIED) {
      throw new IllegalStateException("Query did not find the article, verified: " + found);
    }
    Hit hit = found.getHits(0);
    System.out.printf("query found %s at distance %d%n", hit.getDocId(), hit.getDistance());

    // A batch: each document gets its own outcome, and a bad one is refused without failing the call.
    IndexBatchResponse batch = calls(stub).indexBatch(IndexBatchRequest.newBuilder()
        .addDocuments(IndexRequest.newBuilder().setDocId(prefix + "3").setText("第二篇文章，与第一篇无关。".repeat(8)))
        .addDocuments(IndexRequest.newBuilder().setDocId(prefix + "4"))  // neither text nor simhash
        .build());
    List<String> refused = new ArrayList<>();
    for (IndexOutcome outcome : batch.getOutcomesList()) {
      refused.addAll(violations(outcome.getStatus()));
    }
    System.out.printf("batch indexed %d, rejected %d: %s%n", batch.getIndexed(), batch.getRejected(),
        String.join(", ", refused));

    // Two bad fields in one call: the server names both, as BadRequest field violations.
    try {
      calls(stub).query(QueryRequest.newBuilder().setSimhash(indexed.getSimhash()).setMaxDistance(9)
          .setLimit(1_000_000).build());
      throw new IllegalStateException("a bad Query was answered");
    } catch (StatusRuntimeException e) {
      com.google.rpc.Status status = StatusProto.fromThrowable(e);
      if (status == null || status.getCode() != io.grpc.Status.Code.INVALID_ARGUMENT.value()) {
        throw new IllegalStateException("a bad Query was refused with " + e.getStatus());
      }
      System.out.println("refused: " + String.join(", ", violations(status)));
    }

    long deleted = calls(stub).delete(DeleteRequest.newBuilder()
        .addDocIds(prefix + "1").addDocIds(prefix + "3").build()).getDeleted();
    System.out.printf("deleted %d%n", deleted);
  }

  private static SimHashIndexGrpc.SimHashIndexBlockingStub calls(SimHashIndexGrpc.SimHashIndexBlockingStub stub) {
    return stub.withDeadlineAfter(30, TimeUnit.SECONDS);
  }

  /** The fields a status's google.rpc.BadRequest details name, in order. */
  private static List<String> violations(com.google.rpc.Status status) {
    List<String> fields = new ArrayList<>();
    for (Any detail : status.getDetailsList()) {
      if (detail.is(BadRequest.class)) {
        try {
          for (BadRequest.FieldViolation violation : detail.unpack(BadRequest.class).getFieldViolationsList()) {
            fields.add(violation.getField());
          }
        } catch (InvalidProtocolBufferException e) {
          throw new IllegalStateException("a BadRequest detail that does not parse", e);
        }
      }
    }
    return fields;
  }
}
