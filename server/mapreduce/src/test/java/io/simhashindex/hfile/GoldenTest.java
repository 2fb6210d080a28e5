package io.simhashindex.hfile;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The row-key codec and the sketch comparison against tests/golden, the files the Python tests
 * (tests/unit/test_golden_codec.py) read too: the jobs write and compare what the service does.
 */
class GoldenTest {
  private static final Path GOLDEN = Paths.get(System.getProperty("golden.dir", "../../tests/golden"));

  private static List<String[]> rows(String name) throws IOException {
    List<String[]> out = new ArrayList<>();
    for (String line : Files.readAllLines(GOLDEN.resolve(name), StandardCharsets.UTF_8)) {
      if (!line.isEmpty() && !line.startsWith("#")) {
        out.add(line.split("\t"));
      }
    }
    return out;
  }

  private static byte[] bytes(String hex) {
    byte[] out = new byte[hex.length() / 2];
    for (int i = 0; i < out.length; i++) {
      out[i] = (byte) Integer.parseInt(hex.substring(2 * i, 2 * i + 2), 16);
    }
    return out;
  }

  @Test
  void drawerKeysAreTheGoldenOnes() throws IOException {
    List<String[]> rows = rows("drawer-keys.tsv");
    assertTrue(rows.size() > 50, "drawer-keys.tsv has too few rows");
    for (String[] row : rows) {
      long fp = Long.parseUnsignedLong(row[0], 16);
      String[] keys = row[1].split(",");
      assertEquals(Codec.drawers(), keys.length);
      for (int flag = 0; flag < keys.length; flag++) {
        assertArrayEquals(bytes(keys[flag]), Codec.drawerKey(fp, flag), row[0] + " drawer " + flag);
      }
      assertEquals(fp, Codec.fingerprintOf(Codec.fingerprintRow(fp)));
    }
  }

  @Test
  void partRowKeysAreTheGoldenOnes() throws IOException {
    List<String[]> rows = rows("part-row-keys.tsv");
    assertTrue(rows.size() > 50, "part-row-keys.tsv has too few rows");
    for (String[] row : rows) {
      long part = Long.parseUnsignedLong(row[0], 16);
      long whole = Long.parseUnsignedLong(row[1], 16);
      String[] keys = row[2].split(",");
      assertEquals(Codec.drawers(), keys.length);
      for (int flag = 0; flag < keys.length; flag++) {
        byte[] key = Codec.partRowKey(part, whole, flag);
        assertArrayEquals(bytes(keys[flag]), key, row[0] + " part row " + flag);
        assertTrue(Codec.isPartRow(key, 0, key.length));
      }
      byte[] drawer = Codec.drawerKey(part, 0);
      assertTrue(!Codec.isPartRow(drawer, 0, drawer.length));
    }
  }

  @Test
  void lowestSharedDrawerAgreesWithTheKeys() throws IOException {
    List<String[]> rows = rows("drawer-keys.tsv");
    for (String[] a : rows) {
      for (String[] b : rows) {
        long x = Long.parseUnsignedLong(a[0], 16);
        long y = Long.parseUnsignedLong(b[0], 16);
        int expected = -1;
        for (int flag = 0; flag < Codec.drawers() && expected < 0; flag++) {
          byte[] kx = Codec.drawerKey(x, flag);
          byte[] ky = Codec.drawerKey(y, flag);
          boolean same = true;
          for (int i = 0; i < Codec.PREFIX; i++) {
            same &= kx[i] == ky[i];
          }
          expected = same ? flag : -1;
        }
        assertEquals(expected, Codec.lowestSharedDrawer(x ^ y), a[0] + " " + b[0]);
      }
    }
  }

  @Test
  void sketchSimilaritiesAreTheGoldenOnes() throws IOException {
    List<String[]> rows = rows("sketch-pairs.tsv");
    assertTrue(rows.size() > 50, "sketch-pairs.tsv has too few rows");
    for (String[] row : rows) {
      byte[] a = bytes(row[1]);
      byte[] b = bytes(row[2]);
      assertTrue(Sketches.comparable(a, b), row[0]);
      assertEquals(Double.parseDouble(row[3]), Sketches.similarity(a, b), 1e-12, row[0] + " " + row[3]);
    }
  }

  @Test
  void thePartsAfterASketchAreTheGoldenOnes() throws IOException {
    List<String[]> rows = rows("sketch-parts.tsv");
    int withParts = 0;
    for (String[] row : rows) {
      byte[] sketch = bytes(row[1]);
      String[] hex = row.length > 2 && !row[2].isEmpty() ? row[2].split(",") : new String[0];
      long[] want = new long[hex.length];
      for (int i = 0; i < hex.length; i++) {
        want[i] = Long.parseUnsignedLong(hex[i], 16);
      }
      assertArrayEquals(want, Sketches.parts(sketch), row[0]);
      assertTrue(Sketches.comparable(sketch, sketch) && Sketches.similarity(sketch, sketch) == 1.0, row[0]);
      withParts += want.length > 0 ? 1 : 0;
    }
    assertTrue(withParts >= 5, "sketch-parts.tsv has too few sketches with parts");
  }

  @Test
  void renamedTrailersAreJudgedAsRenamesPyJudgesThem() throws IOException {
    List<String[]> rows = rows("renamed-trailers.tsv");
    int renamed = 0;
    for (String[] row : rows) {
      boolean want = Boolean.parseBoolean(row[2]);
      assertEquals(want, Sketches.renamed(Sketches.renames(bytes(row[0]), 0), Sketches.renames(bytes(row[1]), 0)),
          row[0] + " " + row[1]);
      renamed += want ? 1 : 0;
    }
    assertTrue(rows.size() > 100 && renamed > 10, "renamed-trailers.tsv has too few rows of either answer");
  }
}
