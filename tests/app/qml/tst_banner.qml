import QtQuick
import QtQuick.Controls.Material
import QtTest
import Ember

// Banners: themed colours (readable in the dark theme), dismissible, notices expire and
// errors stay.
Item {
    id: root
    width: 600
    height: 300

    Column {
        width: parent.width
        Banner {
            id: info
            width: parent.width
            error: false
            timeout: 200
            property int dismissals: 0
            onDismissed: { dismissals += 1; text = "" }
        }
        Banner {
            id: failure
            width: parent.width
            error: true
            timeout: 200
            property int dismissals: 0
            onDismissed: { dismissals += 1; text = "" }
        }
        Item {
            id: darkArea
            width: parent.width
            height: 60
            Material.theme: Material.Dark
            Banner { id: darkInfo; width: parent.width; error: false; text: "Running on CPU" }
        }
    }

    TestCase {
        name: "Banner"
        when: windowShown

        function child(item, name) {
            if (item.objectName === name) return item
            for (let i = 0; i < item.children.length; ++i) {
                const found = child(item.children[i], name)
                if (found) return found
            }
            return null
        }
        // WCAG relative luminance, to compare text and background.
        function luminance(c) {
            const f = (v) => v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4)
            return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b)
        }
        function contrast(a, b) {
            const la = luminance(a), lb = luminance(b)
            return (Math.max(la, lb) + 0.05) / (Math.min(la, lb) + 0.05)
        }

        function test_noticeExpiresErrorStays() {
            info.dismissals = 0
            failure.dismissals = 0
            info.text = "Exported to /tmp/a.md"
            failure.text = "The model could not be loaded"
            verify(info.visible && failure.visible)
            tryCompare(info, "dismissals", 1, 5000)
            verify(!info.visible, "the notice went away by itself")
            wait(400)
            compare(failure.dismissals, 0, "an error stays until dismissed")
            verify(failure.visible)
            mouseClick(child(failure, "bannerClose"))
            compare(failure.dismissals, 1)
            verify(!failure.visible)
        }

        // Plain words first; the technical message only behind Details.
        function test_detailsToggle() {
            failure.text = "Could not load the model: the file is incomplete"
            failure.details = ""
            verify(!child(failure, "bannerDetailsToggle").visible, "no details, no toggle")
            failure.details = "gguf: /m/a.gguf: tensor 'x' extends past the end of the file"
            const toggle = child(failure, "bannerDetailsToggle")
            const details = child(failure, "bannerDetails")
            verify(toggle.visible)
            verify(!details.visible, "hidden at first")
            const closed = failure.height
            mouseClick(toggle)
            verify(details.visible)
            compare(details.text, failure.details)
            tryVerify(() => failure.height > closed, 2000, "the banner grows to show them")
            mouseClick(toggle)
            verify(!details.visible)
            failure.text = ""
            failure.details = ""
        }

        function test_darkThemeIsDark() {
            const light = child(info, "bannerText")
            info.text = "x"
            verify(luminance(darkInfo.color) < 0.1, "dark background in the dark theme: " + darkInfo.color)
            verify(luminance(info.color) > 0.5, "light background in the light theme: " + info.color)
            const text = child(darkInfo, "bannerText")
            verify(contrast(text.color, darkInfo.color) >= 4.5, "readable: " + text.color + " on " + darkInfo.color)
            verify(contrast(light.color, info.color) >= 4.5)
            info.text = ""
        }
    }
}
