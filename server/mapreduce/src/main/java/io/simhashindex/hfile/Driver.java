package io.simhashindex.hfile;

import java.io.File;
import java.io.FileNotFoundException;
import java.io.FilterOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collections;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.mapreduce.Job;
import org.apache.hadoop.mapreduce.MRJobConfig;
import org.apache.hadoop.security.UserGroupInformation;
import org.apache.hadoop.util.ClassUtil;
import org.apache.hadoop.util.ToolRunner;
import org.apache.hadoop.yarn.api.ApplicationConstants;
import org.apache.hadoop.yarn.api.ApplicationConstants.Environment;
import org.apache.hadoop.yarn.api.records.ApplicationAttemptId;
import org.apache.hadoop.yarn.api.records.ApplicationId;
import org.apache.hadoop.yarn.api.records.ApplicationReport;
import org.apache.hadoop.yarn.api.records.ApplicationSubmissionContext;
import org.apache.hadoop.yarn.api.records.Container;
import org.apache.hadoop.yarn.api.records.ContainerId;
import org.apache.hadoop.yarn.api.records.ContainerLaunchContext;
import org.apache.hadoop.yarn.api.records.ContainerStatus;
import org.apache.hadoop.yarn.api.records.FinalApplicationStatus;
import org.apache.hadoop.yarn.api.records.LocalResource;
import org.apache.hadoop.yarn.api.records.LocalResourceType;
import org.apache.hadoop.yarn.api.records.LocalResourceVisibility;
import org.apache.hadoop.yarn.api.records.NodeReport;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.api.records.URL;
import org.apache.hadoop.yarn.api.records.UpdatedContainer;
import org.apache.hadoop.yarn.api.records.YarnApplicationState;
import org.apache.hadoop.yarn.client.api.YarnClient;
import org.apache.hadoop.yarn.client.api.YarnClientApplication;
import org.apache.hadoop.yarn.client.api.async.AMRMClientAsync;
import org.apache.hadoop.yarn.conf.YarnConfiguration;

/**
 * hfile-load's job chain driven from inside the cluster, as Spark's cluster deploy mode and Oozie's launcher
 * drive theirs: the submitting machine submits one YARN application and follows it, and the chain's own work
 * (configuring and submitting each job, waiting for it, the hand-over to HBase) spends the cluster's CPU.
 *
 * <p>The submitter ({@link #submit}) moves what the command reads on this machine to the cluster (the
 * normalised input, the list of inputs, the PEX), writes its configuration there, and submits an application
 * whose master is {@link #main}: {@link Main}'s command, run as the submitting JVM would run it, with the same
 * jars (from {@link SharedFiles}) and this configuration.  Its JSON lines go to the cluster's filesystem, a
 * file per attempt, which the submitter reads and prints as they come.  A command that fails unregisters
 * FAILED with its messages; a master whose node is lost is started again by YARN, kills the jobs its earlier
 * attempt submitted (they carry the application's tag), and continues from the finished steps.
 */
final class Driver {
  private Driver() {}

  static final String JARS = "simhash.driver.jars"; // the shared jars: the driver's class path and its jobs'
  static final String ARGS = "simhash.driver.args"; // the command and its options, each Base64, comma-separated
  static final String EVENTS = "simhash.driver.events"; // the directory of the attempts' JSON lines
  static final String TAG = "simhash.driver.tag"; // the application's tag, which its jobs carry too
  static final String CONF = "driver.xml";
  static final String TYPE = "simhash-index";
  private static final int HEARTBEAT_MS = 5000;
  private static final int ATTEMPTS = 2;

  // -- on the submitting machine ----------------------------------------------------------------------------

  /** Submits {@code command} as a YARN application, relays its lines to {@code out}; its exit status. */
  static int submit(Configuration base, String command, Map<String, String> options, PrintStream out)
      throws Exception {
    if (UserGroupInformation.isSecurityEnabled()) {
      throw new IOException("the cluster driver does not carry Kerberos credentials: on a secure cluster give "
          + "--driver client");
    }
    Configuration conf = new Configuration(base);
    Path staging = new Path(Jobs.need(options, "staging"));
    FileSystem fs = Jobs.writable(staging, conf);
    Path dir = fs.makeQualified(new Path(staging, "driver"));
    fs.delete(dir, true); // an earlier run's lines
    fs.mkdirs(dir);
    Map<String, String> opts = new LinkedHashMap<>(options);
    if (opts.containsKey("upload")) {
      Main.upload(fs, staging, opts.remove("upload"));
    }
    if (opts.containsKey("inputs")) {
      Path listed = new Path(dir, "inputs.txt");
      fs.copyFromLocalFile(false, true, Main.named(opts.get("inputs")), listed);
      opts.put("inputs", listed.toString());
    }
    if (opts.containsKey("env")) {
      opts.put("env", SharedFiles.place(conf, new File(opts.get("env"))).toString());
    }
    boolean removeStaging = Boolean.parseBoolean(opts.remove("remove-staging"));
    List<String> args = new ArrayList<>();
    args.add(command);
    for (Map.Entry<String, String> opt : opts.entrySet()) {
      args.add("--" + opt.getKey());
      args.add(opt.getValue());
    }
    List<String> encoded = new ArrayList<>();
    for (String arg : args) {
      encoded.add(Base64.getEncoder().encodeToString(arg.getBytes(StandardCharsets.UTF_8)));
    }
    String tag = "simhash-driver-" + UUID.randomUUID();
    conf.set(ARGS, String.join(",", encoded));
    conf.set(EVENTS, dir.toString());
    conf.set(TAG, tag);
    // Every job the driver submits carries the tag (beside the user's own): a later attempt kills them by it.
    String tags = conf.getTrimmed(MRJobConfig.JOB_TAGS, "");
    conf.set(MRJobConfig.JOB_TAGS, tags.isEmpty() ? tag : tags + "," + tag);
    Map<String, LocalResource> files = new HashMap<>();
    List<String> jars = jars(conf);
    conf.setStrings(JARS, jars.toArray(new String[0]));
    for (String jar : jars) {
      Path path = new Path(jar);
      files.put(path.getName(), resource(path.getFileSystem(conf), path)); // the shared directory's filesystem
    }
    Path written = new Path(dir, CONF);
    try (FSDataOutputStream xml = fs.create(written, true)) {
      conf.writeXml(xml);
    }
    files.put(CONF, resource(fs, written));

    YarnClient yarn = YarnClient.createYarnClient();
    yarn.init(conf);
    yarn.start();
    try {
      YarnClientApplication app = yarn.createApplication();
      ApplicationSubmissionContext context = app.getApplicationSubmissionContext();
      ApplicationId id = context.getApplicationId();
      context.setApplicationName("simhash-index hfile-load: driver (" + command + ")");
      context.setApplicationType(TYPE);
      context.setApplicationTags(Collections.singleton(tag));
      context.setQueue(conf.get(MRJobConfig.QUEUE_NAME, "default"));
      context.setMaxAppAttempts(ATTEMPTS);
      context.setResource(Resource.newInstance(
          conf.getInt(MRJobConfig.MR_AM_VMEM_MB, MRJobConfig.DEFAULT_MR_AM_VMEM_MB), 1));
      Map<String, String> env = new HashMap<>();
      env.put(Environment.CLASSPATH.name(), classPath(conf));
      String java = Environment.JAVA_HOME.$$() + "/bin/java";
      // The cluster's options for a MapReduce master (its heap, the JDK's module flags), and a light JVM.
      String jvm = conf.get(MRJobConfig.MR_AM_COMMAND_OPTS, MRJobConfig.DEFAULT_MR_AM_COMMAND_OPTS) + " "
          + Jobs.LIGHT_JVM;
      String logs = ApplicationConstants.LOG_DIR_EXPANSION_VAR;
      String launch = java + " " + jvm + " " + Driver.class.getName() + " 1>" + logs + "/stdout 2>" + logs
          + "/stderr";
      context.setAMContainerSpec(ContainerLaunchContext.newInstance(files, env,
          Collections.singletonList(launch), null, null, null));
      Thread killer = new Thread(() -> kill(yarn, id, tag));
      Runtime.getRuntime().addShutdownHook(killer);
      ApplicationReport report;
      try {
        yarn.submitApplication(context);
        System.err.println("the driver runs as " + id + " (its log: yarn logs -applicationId " + id + ")");
        report = follow(yarn, id, fs, dir, out);
      } catch (Exception e) { // this side failed (its filesystem, the ResourceManager): nothing is left running
        kill(yarn, id, tag);
        throw e;
      } finally {
        Runtime.getRuntime().removeShutdownHook(killer);
      }
      if (report.getFinalApplicationStatus() == FinalApplicationStatus.SUCCEEDED) {
        if (removeStaging) {
          fs.delete(staging, true);
        }
        return 0;
      }
      String said = report.getDiagnostics() == null ? "" : report.getDiagnostics().trim();
      throw new IOException(said.isEmpty() ? "the driver " + id + " ended " + report.getFinalApplicationStatus()
          : said);
    } finally {
      yarn.stop();
    }
  }

  /**
   * The jars the driver's class path needs, shared on the cluster: this one, the jobs' (HBase's, the codecs'),
   * and the YARN and MapReduce clients', which a cluster's class path for its tasks need not hold.
   */
  private static List<String> jars(Configuration conf) throws IOException {
    Job probe = Job.getInstance(conf);
    org.apache.hadoop.hbase.mapreduce.TableMapReduceUtil.addDependencyJarsForClasses(probe.getConfiguration(),
        org.apache.hadoop.mapred.YARNRunner.class, YarnClient.class);
    Jobs.ship(probe);
    List<String> jars = new ArrayList<>();
    jars.add(SharedFiles.place(conf, new File(ClassUtil.findContainingJar(Driver.class))).toString());
    for (String jar : probe.getConfiguration().getStrings(MRJobConfig.CLASSPATH_FILES, new String[0])) {
      jars.add(new Path(jar).getFileSystem(conf).makeQualified(new Path(jar)).toString());
    }
    return jars;
  }

  private static LocalResource resource(FileSystem fs, Path path) throws IOException {
    FileStatus status = fs.getFileStatus(path);
    return LocalResource.newInstance(URL.fromPath(status.getPath()), LocalResourceType.FILE,
        LocalResourceVisibility.APPLICATION, status.getLen(), status.getModificationTime());
  }

  /** The shipped jars first (as the jobs' tasks have them), then the cluster's YARN and MapReduce class path. */
  private static String classPath(Configuration conf) {
    StringBuilder path = new StringBuilder(Environment.PWD.$$() + "/*");
    List<String> entries = new ArrayList<>();
    Collections.addAll(entries, conf.getStrings(YarnConfiguration.YARN_APPLICATION_CLASSPATH,
        YarnConfiguration.DEFAULT_YARN_CROSS_PLATFORM_APPLICATION_CLASSPATH));
    Collections.addAll(entries, conf.getStrings(MRJobConfig.MAPREDUCE_APPLICATION_CLASSPATH, new String[0]));
    for (String entry : entries) {
      path.append(ApplicationConstants.CLASS_PATH_SEPARATOR).append(entry.trim());
    }
    return path.toString();
  }

  /** Prints the application's lines as they come (each attempt's from its start); its final report. */
  private static ApplicationReport follow(YarnClient yarn, ApplicationId id, FileSystem fs, Path dir,
      PrintStream out) throws Exception {
    long started = System.nanoTime();
    ApplicationAttemptId attempt = null;
    long offset = 0;
    while (true) {
      ApplicationReport report = yarn.getApplicationReport(id);
      ApplicationAttemptId current = report.getCurrentApplicationAttemptId();
      if (attempt != null) {
        offset = relay(fs, events(dir, attempt), offset, out);
      }
      if (current != null && !current.equals(attempt)) { // a new attempt tells its story again
        attempt = current;
        offset = relay(fs, events(dir, attempt), 0, out);
      }
      YarnApplicationState state = report.getYarnApplicationState();
      if (state == YarnApplicationState.FINISHED || state == YarnApplicationState.FAILED
          || state == YarnApplicationState.KILLED) {
        if (attempt != null) {
          relay(fs, events(dir, attempt), offset, out);
        }
        return report;
      }
      Thread.sleep(Jobs.pollMillis((System.nanoTime() - started) / 1_000_000, 1000));
    }
  }

  static Path events(Path dir, ApplicationAttemptId attempt) {
    return new Path(dir, "events." + attempt.getAttemptId());
  }

  /** Prints the whole lines of {@code file} after {@code offset}; the offset after them. */
  static long relay(FileSystem fs, Path file, long offset, PrintStream out) throws IOException {
    byte[] data;
    try (FSDataInputStream in = fs.open(file)) {
      in.seek(offset);
      java.io.ByteArrayOutputStream read = new java.io.ByteArrayOutputStream();
      org.apache.hadoop.io.IOUtils.copyBytes(in, read, 1 << 16, false);
      data = read.toByteArray();
    } catch (FileNotFoundException notYet) {
      return offset;
    }
    int end = data.length;
    while (end > 0 && data[end - 1] != '\n') {
      end--; // a line still being written: the next read takes it whole
    }
    out.print(new String(data, 0, end, StandardCharsets.UTF_8));
    out.flush();
    return offset + end;
  }

  /** The submitter was stopped: the driver goes, and the jobs it submitted with it. */
  private static void kill(YarnClient yarn, ApplicationId id, String tag) {
    try {
      yarn.killApplication(id);
      System.err.println("killed " + id);
      killTagged(yarn, tag, null);
    } catch (Exception e) {
      System.err.println("could not kill " + id + " or its jobs: " + e);
    }
  }

  /** Kills the running applications tagged {@code tag} but {@code spared}. */
  static void killTagged(YarnClient yarn, String tag, ApplicationId spared) throws Exception {
    EnumSet<YarnApplicationState> live = EnumSet.of(YarnApplicationState.NEW, YarnApplicationState.NEW_SAVING,
        YarnApplicationState.SUBMITTED, YarnApplicationState.ACCEPTED, YarnApplicationState.RUNNING);
    for (ApplicationReport app : yarn.getApplications(null, live, Collections.singleton(tag))) {
      if (!app.getApplicationId().equals(spared)) {
        yarn.killApplication(app.getApplicationId());
        System.err.println("killed " + app.getApplicationId() + " (" + app.getName() + ")");
      }
    }
  }

  // -- in the cluster: the application's master ---------------------------------------------------------

  /** The master: registers, kills an earlier attempt's jobs, runs the command, unregisters with its outcome. */
  public static void main(String[] ignored) throws Exception {
    Configuration conf = new Configuration(false);
    conf.addResource(new File(CONF).toURI().toURL());
    ContainerId container = ContainerId.fromString(System.getenv(Environment.CONTAINER_ID.name()));
    ApplicationAttemptId attempt = container.getApplicationAttemptId();
    AMRMClientAsync<?> master = AMRMClientAsync.createAMRMClientAsync(HEARTBEAT_MS, new Quiet());
    master.init(conf);
    master.start();
    master.registerApplicationMaster(InetAddress.getLocalHost().getHostName(), 0, "");
    int code;
    String said = "";
    Path dir = new Path(conf.get(EVENTS));
    FileSystem fs = dir.getFileSystem(conf);
    try (PrintStream out = new PrintStream(new Flushed(fs.create(events(dir, attempt), true)), true, "UTF-8")) {
      try {
        if (attempt.getAttemptId() > 1) { // the earlier attempt's jobs would write where this one's do
          YarnClient yarn = YarnClient.createYarnClient();
          yarn.init(conf);
          yarn.start();
          try {
            killTagged(yarn, conf.get(TAG), attempt.getApplicationId());
          } finally {
            yarn.stop();
          }
        }
        List<String> args = new ArrayList<>();
        for (String arg : conf.getStrings(ARGS)) {
          args.add(new String(Base64.getDecoder().decode(arg), StandardCharsets.UTF_8));
        }
        code = ToolRunner.run(conf, new Main(out), args.toArray(new String[0]));
        said = code == 0 ? "" : "the " + args.get(0) + " command ended with status " + code;
      } catch (Throwable e) {
        e.printStackTrace();
        said = Jobs.said(e);
        code = 1;
      }
    }
    master.unregisterApplicationMaster(code == 0 ? FinalApplicationStatus.SUCCEEDED : FinalApplicationStatus.FAILED,
        said, "");
    master.stop();
    System.exit(0); // the master's end is its unregistration: no thread left running holds it up
  }

  /** Each line reaches the cluster's filesystem as it is printed (hflush), for the submitter to read. */
  private static final class Flushed extends FilterOutputStream {
    private final FSDataOutputStream stream;

    Flushed(FSDataOutputStream stream) {
      super(stream);
      this.stream = stream;
    }

    @Override
    public void write(byte[] b, int off, int len) throws IOException {
      stream.write(b, off, len);
    }

    @Override
    public void flush() throws IOException {
      stream.hflush();
    }
  }

  /** A master that asks for no container: heartbeats only. */
  private static final class Quiet extends AMRMClientAsync.AbstractCallbackHandler {
    @Override
    public void onContainersCompleted(List<ContainerStatus> statuses) {}

    @Override
    public void onContainersAllocated(List<Container> containers) {}

    @Override
    public void onContainersUpdated(List<UpdatedContainer> containers) {}

    @Override
    public void onShutdownRequest() {
      System.err.println("the ResourceManager asked this master to stop");
      System.exit(1);
    }

    @Override
    public void onNodesUpdated(List<NodeReport> updated) {}

    @Override
    public float getProgress() {
      return 0;
    }

    @Override
    public void onError(Throwable e) {
      System.err.println("lost the ResourceManager: " + e);
      System.exit(1);
    }
  }
}
