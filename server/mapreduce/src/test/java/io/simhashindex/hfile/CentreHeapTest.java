package io.simhashindex.hfile;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Iterator;
import org.apache.hadoop.mapreduce.counters.GenericCounter;
import org.junit.jupiter.api.Test;

/** A component too large for the centres step's heap fails with a message that names it and the remedy. */
class CentreHeapTest {
  static final long ROOT = 77;

  /** Feeds {@link CentresJob#stars} a component of ever more documents, each linked to the root, until it fails. */
  public static void main(String[] args) {
    Link key = new Link();
    key.root = ROOT;
    Iterable<Object> links = () -> new Iterator<Object>() {
      private long next = 1;

      @Override
      public boolean hasNext() {
        return true;
      }

      @Override
      public Object next() { // as Hadoop's values do, the key moves along with them
        key.a = ROOT;
        key.b = ROOT + next++;
        return key;
      }
    };
    try {
      CentresJob.stars(key, links, new GenericCounter("simhash", "unmerged"));
      System.exit(1);
    } catch (IOException e) {
      System.out.println(e.getMessage());
      System.exit(e.getCause() instanceof OutOfMemoryError ? 3 : 2);
    }
  }

  @Test
  void aComponentTooLargeForTheHeapNamesItselfAndTheRemedy() throws Exception {
    String java = System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
    Process child = new ProcessBuilder(Arrays.asList(java, "-Xmx48m", "-XX:+UseSerialGC", "-cp",
        System.getProperty("java.class.path"), CentreHeapTest.class.getName())).redirectErrorStream(true).start();
    String said;
    try (InputStream in = child.getInputStream()) {
      ByteArrayOutputStream out = new ByteArrayOutputStream();
      byte[] buffer = new byte[8192];
      for (int n; (n = in.read(buffer)) > 0; ) {
        out.write(buffer, 0, n);
      }
      said = out.toString(StandardCharsets.UTF_8.name());
    }
    assertEquals(3, child.waitFor(), said);
    assertTrue(said.contains("the component of root node " + ROOT + " did not fit this reducer's heap"), said);
    assertTrue(said.contains("mapreduce.reduce.memory.mb") && said.contains("--clustering components"), said);
  }
}
