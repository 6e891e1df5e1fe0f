import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Layouts

// A menu entry that shows its action's shortcut on the right ("Ctrl+,", "Esc").
MenuItem {
    id: entry
    contentItem: RowLayout {
        spacing: 24
        Label {
            objectName: "menuItemText"
            text: entry.text.replace(/&(?!&)/g, "")
            font: entry.font
            color: entry.enabled ? entry.Material.foreground : entry.Material.hintTextColor
            Layout.fillWidth: true
        }
        Label {
            objectName: "menuItemShortcut"
            text: entry.action && entry.action.shortcut ? String(entry.action.shortcut) : ""
            visible: text.length > 0
            font: entry.font
            color: entry.Material.hintTextColor
        }
    }
}
