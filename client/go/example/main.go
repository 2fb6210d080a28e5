// A Go service calling simhash-index: it indexes a document, deduplicates a repost of it, queries by text
// with verification, and reads the field violations of a refused call.  Run against a server:
//
//	go run ./example -target 127.0.0.1:50051
//
// It prints one line per step and exits non-zero if the server does not answer as documented.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	pb "github.com/simhash-index/simhash-index/go/simhashindexv1"
)

func main() {
	target := flag.String("target", "127.0.0.1:50051", "the server's host:port")
	prefix := flag.String("id-prefix", "go-example-", "prefix of the document ids written")
	flag.Parse()
	if err := run(*target, *prefix); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run(target, prefix string) error {
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	client := pb.NewSimHashIndexClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	article := strings.Repeat("近似重复检测把一篇文章变成六十四位的指纹，再在索引里找汉明距离不超过三的指纹。", 12)
	indexed, err := client.Index(ctx, &pb.IndexRequest{DocId: prefix + "1", Text: &article})
	if err != nil {
		return fmt.Errorf("Index: %w", err)
	}
	fmt.Printf("indexed %s %016x\n", indexed.DocId, indexed.Simhash)

	repost := article + "（本文转载自技术博客）"
	dedup, err := client.Deduplicate(ctx, &pb.DeduplicateRequest{DocId: prefix + "2", Text: &repost})
	if err != nil {
		return fmt.Errorf("Deduplicate: %w", err)
	}
	if dedup.Stored || len(dedup.Hits) == 0 || dedup.Hits[0].DocId != prefix+"1" {
		return fmt.Errorf("Deduplicate stored the repost or named another document: %v", dedup)
	}
	fmt.Printf("duplicate of %s (similarity %.2f)\n", dedup.Hits[0].DocId, dedup.Hits[0].GetSimilarity())

	floor := 0.9
	found, err := client.Query(ctx, &pb.QueryRequest{Text: &article, MinSimilarity: &floor})
	if err != nil {
		return fmt.Errorf("Query: %w", err)
	}
	if len(found.Hits) == 0 || found.Hits[0].Verification != pb.Verification_VERIFICATION_VERIFIED {
		return fmt.Errorf("Query did not find the article, verified: %v", found)
	}
	fmt.Printf("query found %s at distance %d\n", found.Hits[0].DocId, found.Hits[0].Distance)

	// Two bad fields in one call: the server names both, as BadRequest field violations.
	far := uint32(9)
	_, err = client.Query(ctx, &pb.QueryRequest{Simhash: &indexed.Simhash, MaxDistance: &far, Limit: 1_000_000})
	st := status.Convert(err)
	if st.Code() != codes.InvalidArgument {
		return fmt.Errorf("a bad Query was answered with %v", err)
	}
	var fields []string
	for _, detail := range st.Details() {
		if bad, ok := detail.(*errdetails.BadRequest); ok {
			for _, violation := range bad.GetFieldViolations() {
				fields = append(fields, violation.GetField())
			}
		}
	}
	fmt.Printf("refused: %s\n", strings.Join(fields, ", "))

	deleted, err := client.Delete(ctx, &pb.DeleteRequest{DocIds: []string{prefix + "1"}})
	if err != nil {
		return fmt.Errorf("Delete: %w", err)
	}
	fmt.Printf("deleted %d\n", deleted.Deleted)
	return nil
}
