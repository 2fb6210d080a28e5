package io.simhashindex.hfile;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.stream.Stream;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.security.UserGroupInformation;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Jobs share one uploaded copy of each jar or PEX, named by its content (here on Hadoop's local filesystem). */
class SharedFilesTest {
  @TempDir Path tmp;

  @org.junit.jupiter.api.BeforeEach
  void ownCache() {
    SharedFiles.cache = tmp.resolve("cache").resolve("digests.tsv");
    SharedFiles.forget();
  }

  private Job job(Path... jars) throws Exception {
    Configuration conf = new Configuration(false);
    conf.set("fs.defaultFS", "file:///");
    conf.set("yarn.app.mapreduce.am.staging-dir", tmp.resolve("staging").toString());
    conf.setStrings("tmpjars", Arrays.stream(jars).map(p -> p.toUri().toString()).toArray(String[]::new));
    return Job.getInstance(conf);
  }

  private static Path write(Path path, String text) throws java.io.IOException {
    return Files.write(path, text.getBytes(StandardCharsets.UTF_8));
  }

  private static String read(String path) throws java.io.IOException {
    return new String(Files.readAllBytes(java.nio.file.Paths.get(path)), StandardCharsets.UTF_8);
  }

  private String[] shipped(Job job) {
    return job.getConfiguration().getStrings("mapreduce.job.classpath.files");
  }

  @Test
  void twoJobsShareOneCopyAndAChangedJarGetsANewOne() throws Exception {
    Path a = write(tmp.resolve("a.jar"), "first");
    Path b = write(tmp.resolve("b.jar"), "second");
    Job first = job(a, b);
    SharedFiles.share(first);
    Job second = job(a, b);
    SharedFiles.share(second);

    assertNull(first.getConfiguration().get("tmpjars")); // Hadoop uploads nothing more per job
    assertEquals(2, shipped(first).length);
    assertArrayEquals(shipped(first), shipped(second));
    String user = UserGroupInformation.getCurrentUser().getShortUserName();
    try (Stream<Path> files = Files.list(tmp.resolve("staging").resolve(user).resolve(SharedFiles.DIRECTORY))) {
      assertEquals(2, files.filter(p -> !p.getFileName().toString().endsWith(".crc")).count());
    }
    assertEquals("first", read(shipped(first)[0].replaceFirst("^file:", "")));

    write(a, "rebuilt");
    Job third = job(a, b);
    SharedFiles.share(third);
    assertNotEquals(shipped(first)[0], shipped(third)[0]);
    assertEquals(shipped(first)[1], shipped(third)[1]);
    assertEquals("rebuilt", read(shipped(third)[0].replaceFirst("^file:", "")));
  }

  @Test
  void aPexIsPlacedOnceByItsContent() throws Exception {
    Path pex = write(tmp.resolve("simhash-index.pex"), "environment");
    Configuration conf = job().getConfiguration();
    org.apache.hadoop.fs.Path first = SharedFiles.place(conf, pex.toFile());
    assertEquals(first, SharedFiles.place(conf, pex.toFile()));
    assertEquals(true, first.getName().matches("simhash-index-[0-9a-f]{16}\\.pex"), first.getName());
    write(pex, "rebuilt");
    org.apache.hadoop.fs.Path second = SharedFiles.place(conf, pex.toFile());
    assertNotEquals(first, second);
    assertEquals("rebuilt", read(second.toUri().getPath()));
    assertEquals("environment", read(first.toUri().getPath())); // a load under way keeps its copy
  }

  @Test
  void aDigestIsKeptBetweenRunsByPathSizeAndTime() throws Exception {
    Path pex = write(tmp.resolve("simhash-index.pex"), "environment");
    Configuration conf = job().getConfiguration();
    String digest = SharedFiles.place(conf, pex.toFile()).getName().replaceAll(".*-([0-9a-f]{16})\\.pex", "$1");
    String line = Files.readAllLines(SharedFiles.cache).get(0);
    assertEquals(digest + "\t" + pex.toFile().getAbsolutePath() + "\t" + Files.size(pex) + "\t"
        + pex.toFile().lastModified(), line);
    // A new JVM takes the kept digest rather than reading the file again: here one that says otherwise.
    write(SharedFiles.cache, line.replace(digest, "00000000000000aa") + "\n");
    SharedFiles.forget();
    assertEquals("simhash-index-00000000000000aa.pex", SharedFiles.place(conf, pex.toFile()).getName());
  }
}
