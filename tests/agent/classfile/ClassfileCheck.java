/* SPDX-License-Identifier: Apache-2.0 */
// Runs the edited Sample (tests/agent/fixtures/Sample.java) through the JVM's verifier and
// checks what each kind of edit does. Usage: ClassfileCheck DIR_OF_EDITED_SAMPLE
import java.io.File;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.net.URL;
import java.net.URLClassLoader;
import sparkshim.agent.Hooks;

public final class ClassfileCheck {
    static int failures;

    static void check(String what, Object got, Object want) {
        if (String.valueOf(got).equals(String.valueOf(want))) {
            System.out.println("ok: " + what + ": " + got);
        } else {
            System.out.println("FAIL: " + what + ": got " + got + ", want " + want);
            failures++;
        }
    }

    static String calls() {
        String s = Hooks.calls.toString();
        Hooks.calls.setLength(0);
        return s;
    }

    public static void main(String[] args) throws Exception {
        URLClassLoader loader = new URLClassLoader(new URL[] {new File(args[0]).toURI().toURL()},
                ClassfileCheck.class.getClassLoader());
        Class<?> sample = Class.forName("Sample", true, loader);
        Object s = sample.getDeclaredConstructor().newInstance();
        Field held = sample.getDeclaredField("held");
        held.setAccessible(true); // package-private, and Sample has its own loader
        Method acquire = sample.getMethod("acquire", long.class, Object.class);
        Method page = sample.getMethod("page", long.class);
        Method insert = sample.getMethod("insert", Object.class, long.class, int.class, long.class,
                boolean.class);
        Method maybe = sample.getMethod("maybe", Object.class, long.class);

        // call: the hook sees the arguments first, then the original runs and returns
        check("call: acquire(5, c) returns", acquire.invoke(s, 5L, "c"), 5L);
        check("call: hook calls", calls(), "acquire(5,c)");
        check("call: original ran (held)", held.getLong(s), 5L);
        Method renamed = sample.getDeclaredMethod("acquire$sparkshim", long.class, Object.class);
        check("call: original renamed and private", Modifier.isPrivate(renamed.getModifiers()), true);

        // deny: false from the hook lets the original answer, true answers false without it
        check("deny: page(100), hook says no", page.invoke(s, 100L), true);
        Hooks.deny = true;
        check("deny: page(100), hook says deny", page.invoke(s, 100L), false);
        check("deny: hook calls", calls(), "page(100)page(100)");
        Hooks.deny = false;

        // guarded: no hook call while the guard is false, the original always runs
        insert.invoke(s, null, 1L, 3, 7L, false);
        check("guarded: guard off: hook calls", calls(), "");
        Hooks.armed = true;
        insert.invoke(s, "b", 2L, 4, 8L, true);
        check("guarded: guard on: hook calls", calls(), "insert(b,2,4,8,true)");
        check("guarded: original ran both times (held)", held.getLong(s), 12L);
        Hooks.armed = false;

        // replaced call: maybe() asks the hook, not grant(), for 2 * 30 - 12
        check("replaced call: maybe(c, 30)", maybe.invoke(s, "c", 30L), true);
        check("replaced call: hook calls", calls(), "grant(48)");
        check("replaced call: the hook's 0 was used (held)", held.getLong(s), 12L);

        if (failures > 0) {
            System.out.println(failures + " check(s) failed");
            System.exit(1);
        }
    }
}
