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
 * The jars a job ships (what {@code TableMapReduceUtil.addDependencyJars} listed in {@code tmpjars}), kept
 * on the cluster's filesystem once, named by their content, and put on the tasks' class path from there.
 * Hadoop would otherwise upload every jar into each job's staging directory, and each NodeManager would
 * localize them again for each job: most of the seconds a submission took, for each of the many short jobs
 * of {@code clusters}.  A NodeManager localizes a file it has already seen (same path, same timestamp) only
 * once.  The directory is beside the user's MapReduce staging area ({@code yarn.app.mapreduce.am.staging-dir}).
 */
final class SharedJars {
  private SharedJars() {}

  static final String DIRECTORY = "simhash-index-jars";
  private static final Map<String, String> DIGESTS = new HashMap<>();

  /** Moves the job's {@code tmpjars} to the shared directory (uploading those not there yet). */
  static void share(Job job) throws IOException {
    Configuration conf = job.getConfiguration();
    String[] jars = conf.getStrings("tmpjars");
    if (jars == null) {
      return;
    }
    String user = UserGroupInformation.getCurrentUser().getShortUserName();
    Path dir = new Path(MRApps.getStagingAreaDir(conf, user).getParent(), DIRECTORY);
    FileSystem fs = dir.getFileSystem(conf);
    for (String jar : jars) {
      URI uri = URI.create(jar);
      if (uri.getScheme() != null && !"file".equals(uri.getScheme())) {
        job.addFileToClassPath(new Path(uri)); // already on a cluster filesystem
        continue;
      }
      File local = new File(uri.getPath());
      String name = local.getName().replaceFirst("\\.jar$", "") + "-" + digest(local) + ".jar";
      Path remote = fs.makeQualified(new Path(dir, name));
      if (!fs.exists(remote)) {
        // Another submitter may upload the same jar at once: each writes its own file and renames it in.
        Path partial = new Path(dir, "." + name + "." + UUID.randomUUID());
        fs.copyFromLocalFile(false, true, new Path(local.toURI()), partial);
        if (!fs.rename(partial, remote)) {
          fs.delete(partial, false);
          if (!fs.exists(remote)) {
            throw new IOException("could not place " + local + " at " + remote);
          }
        }
      }
      job.addFileToClassPath(remote);
    }
    conf.unset("tmpjars");
  }

  /** The first 16 hex digits of the file's SHA-256, computed once per file, size and time in this JVM. */
  private static synchronized String digest(File file) throws IOException {
    String key = file.getPath() + "\t" + file.length() + "\t" + file.lastModified();
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
      StringBuilder hex = new StringBuilder();
      for (byte b : sha.digest()) {
        hex.append(String.format("%02x", b));
      }
      String digest = hex.substring(0, 16);
      DIGESTS.put(key, digest);
      return digest;
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException(e);
    }
  }
}
