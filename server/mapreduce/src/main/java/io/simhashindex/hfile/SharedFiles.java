package io.simhashindex.hfile;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.nio.file.Files;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HashMap;
import java.util.Map;
import java.util.UUID;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.v2.util.MRApps;
import org.apache.hadoop.security.UserGroupInformation;

/**
 * The files a job ships, kept on the cluster's filesystem once, named by their content: the jars
 * {@code TableMapReduceUtil.addDependencyJars} listed in {@code tmpjars}, put on the tasks' class path from
 * there, and the parse job's PEX.  Hadoop would otherwise upload every jar into each job's staging directory,
 * and each NodeManager would localize them again for each job: most of the seconds a submission took, for
 * each of the many short jobs of {@code clusters}; and the PEX, tens of megabytes, would go up with every
 * load.  A NodeManager localizes a file it has already seen (same path, same timestamp) only once.  The
 * directory is beside the user's MapReduce staging area ({@code yarn.app.mapreduce.am.staging-dir}).
 */
final class SharedFiles {
  private SharedFiles() {}

  static final String DIRECTORY = "simhash-index-shared";
  private static final Map<String, String> DIGESTS = new HashMap<>();

  /** Moves the job's {@code tmpjars} to the shared directory (uploading those not there yet). */
  static void share(Job job) throws IOException {
    Configuration conf = job.getConfiguration();
    String[] jars = conf.getStrings("tmpjars");
    if (jars == null) {
      return;
    }
    for (String jar : jars) {
      URI uri = URI.create(jar);
      if (uri.getScheme() != null && !"file".equals(uri.getScheme())) {
        job.addFileToClassPath(new Path(uri)); // already on a cluster filesystem
      } else {
        job.addFileToClassPath(place(conf, new File(uri.getPath())));
      }
    }
    conf.unset("tmpjars");
  }

  /** The shared directory, beside this user's MapReduce staging area. */
  static Path directory(Configuration conf) throws IOException {
    String user = UserGroupInformation.getCurrentUser().getShortUserName();
    return new Path(MRApps.getStagingAreaDir(conf, user).getParent(), DIRECTORY);
  }

  /** The shared copy of a local file (uploaded if not there yet): its name, then its content's digest. */
  static Path place(Configuration conf, File local) throws IOException {
    Path dir = directory(conf);
    FileSystem fs = dir.getFileSystem(conf);
    String name = local.getName();
    int dot = name.lastIndexOf('.');
    String stem = dot > 0 ? name.substring(0, dot) : name;
    String shared = stem + "-" + digest(local) + (dot > 0 ? name.substring(dot) : "");
    Path remote = fs.makeQualified(new Path(dir, shared));
    if (!fs.exists(remote)) {
      // Another submitter may upload the same file at once: each writes its own copy and renames it in.
      Path partial = new Path(dir, "." + shared + "." + UUID.randomUUID());
      fs.copyFromLocalFile(false, true, new Path(local.toURI()), partial);
      if (!fs.rename(partial, remote)) {
        fs.delete(partial, false);
        if (!fs.exists(remote)) {
          throw new IOException("could not place " + local + " at " + remote);
        }
      }
    }
    return remote;
  }

  /**
   * The first 16 hex digits of the file's SHA-256, computed once per file, size and modification time, and
   * kept between runs in {@link #cache}: hashing the PEX and the jars again at each load was half the
   * submitting JVM's CPU (SHA-256 has no intrinsic under C1).
   */
  private static synchronized String digest(File file) throws IOException {
    String key = file.getAbsolutePath() + "\t" + file.length() + "\t" + file.lastModified();
    if (DIGESTS.isEmpty()) {
      readCache();
    }
    String known = DIGESTS.get(key);
    if (known != null) {
      return known;
    }
    try (InputStream in = Files.newInputStream(file.toPath())) {
      MessageDigest sha = MessageDigest.getInstance("SHA-256");
      byte[] buffer = new byte[1 << 16];
      for (int n; (n = in.read(buffer)) > 0; ) {
        sha.update(buffer, 0, n);
      }
      String digest = hex(sha.digest());
      DIGESTS.put(key, digest);
      remember(key, digest);
      return digest;
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }

  /** The first 8 bytes of a digest in hex: a name's 16 digits. */
  static String hex(byte[] digest) {
    StringBuilder hex = new StringBuilder();
    for (int i = 0; i < 8; i++) {
      hex.append(String.format("%02x", digest[i]));
    }
    return hex.toString();
  }

  /** Lines of digest, then the key (path, size, time; tab-separated); the user's own cache directory. */
  static java.nio.file.Path cache = java.nio.file.Paths.get(
      System.getenv("XDG_CACHE_HOME") != null ? System.getenv("XDG_CACHE_HOME")
          : System.getProperty("user.home") + "/.cache", "simhash-index", "shared-file-digests.tsv");
  private static final long CACHE_LIMIT = 1 << 20; // bytes: beyond, it starts afresh

  /** Forgets this JVM's digests, as a new JVM starts (tests). */
  static synchronized void forget() {
    DIGESTS.clear();
  }

  private static void readCache() {
    try {
      if (Files.size(cache) > CACHE_LIMIT) {
        Files.delete(cache);
        return;
      }
      for (String line : Files.readAllLines(cache, java.nio.charset.StandardCharsets.UTF_8)) {
        String[] parts = line.split("\t", 2);
        if (parts.length == 2 && parts[0].length() == 16) {
          DIGESTS.put(parts[1], parts[0]);
        }
      }
    } catch (IOException e) {
      // none yet, or unreadable: every digest is computed, as without a cache
    }
  }

  /** Appends one line (a single short write: concurrent submitters' lines do not interleave). */
  private static void remember(String key, String digest) {
    try {
      Files.createDirectories(cache.getParent());
      Files.write(cache, (digest + "\t" + key + "\n").getBytes(java.nio.charset.StandardCharsets.UTF_8),
          java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.APPEND);
    } catch (IOException e) {
      System.err.println("warning: cannot keep file digests in " + cache + " (" + e + "); they are computed each run");
    }
  }
}
