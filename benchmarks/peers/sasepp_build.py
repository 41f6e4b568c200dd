"""Build the SASE++ Java engine (github.com/haopeng/sase-advanced) from its git mirror with ``javac``, and a driver
of ours that runs it as the authors' ``HadoopUsecasePreciseUI`` does but also reports the engine's CPU time.

Why a driver: the UI's profiler times the engine by wall clock (``System.nanoTime`` around each event), which on a
shared 2-core machine at load 6-9 counts other processes' time against SASE++, while our side is timed in CPU
seconds.  ``TimedPreciseRun`` calls what the UI calls, in its order (flags into ``ConfigFlags``, ``EngineController``
with the NFA file, per repeat: ``initializeEngine``, ``System.gc``, a ``GangliaHadoopStreamController`` over the stream
file, ``runEngine``, ``Profiling.printProfiling``) and prints, beside the UI's figures, the process CPU time (every
JVM thread: the engine, its garbage collector, the JIT) and the main thread's CPU time over ``runEngine``.  It takes
the UI's first seven arguments.  Nothing of SASE++'s own code is kept in this repository.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

MIRROR = Path("/work/.mirror/haopeng+sase-advanced/repo")
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "hcep" / "sasepp"
JARS = ("lib/jeval.jar", "lib/commons-math3-3.5.jar", "lib/commons-lang3-3.4.jar")
UI = "edu.umass.cs.sase.UI.HadoopUsecasePreciseUI"
MAIN = "hcep.TimedPreciseRun"
DRIVER = """package hcep;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;

import edu.umass.cs.sase.engine.ConfigFlags;
import edu.umass.cs.sase.engine.EngineController;
import edu.umass.cs.sase.engine.Profiling;
import edu.umass.cs.sase.stream.GangliaHadoopStreamController;

/** HadoopUsecasePreciseUI's run (arguments: nfa stream print postpone onTheFly collapsed repeat), with CPU times. */
public class TimedPreciseRun {
    public static void main(String[] args) throws Exception {
        ConfigFlags.printResults = args[2].equals("1");
        ConfigFlags.usingPostponingOptimization = args[3].equals("1");
        ConfigFlags.evaluatePredicatesOnTheFly = args[4].equals("1");
        ConfigFlags.usingCollapsedFormatResult = args[5].equals("1");
        int repeat = Integer.parseInt(args[6]);
        com.sun.management.OperatingSystemMXBean os =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        EngineController engine = new EngineController();
        engine.setNfa(args[0]);
        for (int i = 1; i <= repeat; i++) {
            engine.initializeEngine();
            System.gc();
            GangliaHadoopStreamController stream = new GangliaHadoopStreamController(args[1]);
            engine.setInput(stream.getMyStream());
            long p0 = os.getProcessCpuTime(), t0 = threads.getCurrentThreadCpuTime();
            engine.runEngine();
            long p1 = os.getProcessCpuTime(), t1 = threads.getCurrentThreadCpuTime();
            Profiling.printProfiling();
            System.out.println("Engine Process CPU Time: " + (p1 - p0) + " nanoseconds");
            System.out.println("Engine Thread CPU Time: " + (t1 - t0) + " nanoseconds");
        }
        System.exit(0);
    }
}
"""


def build(mirror: Path = MIRROR, cache: Path = CACHE) -> Path:
    """``javac`` the SASE++ engine from the mirror into ``cache/classes`` (once) and the driver into
    ``cache/driver``; the class path to run the driver."""
    classes, driver = cache / "classes", cache / "driver"
    jars = [str(cache / j) for j in JARS]
    cp = os.pathsep.join([str(driver), str(classes), *jars])
    git = ["git", "--git-dir", str(mirror)]
    if not (classes / (UI.replace(".", "/") + ".class")).is_file():
        cache.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run([*git, "archive", "HEAD", "src"], check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(cache)], input=archive, check=True)
        (cache / "lib").mkdir(exist_ok=True)
        for jar in JARS:
            shown = subprocess.run([*git, "show", f"HEAD:{jar}"], check=True, capture_output=True)
            (cache / jar).write_bytes(shown.stdout)
        src = cache / "src" / (UI.replace(".", "/") + ".java")
        javac = ["javac", "-nowarn", "-encoding", "UTF-8", "-d", str(classes), "-cp", os.pathsep.join(jars)]
        subprocess.run([*javac, "-sourcepath", str(cache / "src"), str(src)], check=True, capture_output=True)
    source = cache / "driver-src" / "hcep" / "TimedPreciseRun.java"
    if not source.is_file() or source.read_text() != DRIVER:
        source.parent.mkdir(parents=True, exist_ok=True)
        source.write_text(DRIVER)
        javac = ["javac", "-nowarn", "-d", str(driver), "-cp", os.pathsep.join([str(classes), *jars])]
        subprocess.run([*javac, str(source)], check=True, capture_output=True)
    return Path(cp)
