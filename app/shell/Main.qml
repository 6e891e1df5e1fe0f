pragma ComponentBehavior: Bound
import QtQuick
import QtQuick.Controls
import QtQuick.Controls.Material
import QtQuick.Dialogs
import QtQuick.Layouts
import Ember

// The main window. The C++ side passes the controllers in as initial properties.
ApplicationWindow {
    id: window
    required property ChatController chat
    required property InferenceController inference
    required property Settings settings
    property PerfMonitor perf: null     // for the performance overlay
    property bool askForModel: false   // no model given or found: open the model dialog on start
    property ModelLibrary models: null  // for the model dialog
    property bool showSettings: false  // open the settings dialog on start (--show-settings)
    property ApiServerStatus apiServer: null  // the local API server (null: not built)

    width: 1180
    height: 760
    minimumWidth: 720
    minimumHeight: 480
    visible: true
    title: chat.currentTitle.length ? chat.currentTitle + " — Ember" : "Ember"

    Material.theme: settings.theme === "dark" ? Material.Dark
                  : settings.theme === "light" ? Material.Light : Material.System
    Material.accent: Material.DeepOrange
    Material.primary: Material.DeepOrange

    AppActions {
        id: actions
        chat: window.chat
        inference: window.inference
        haveModels: !!window.models
        onOpenModelRequested: modelDialog.open()
        onManageModelsRequested: modelLibraryDialog.open()
        onExportRequested: (format) => exportDialog.ask(format)
        onSettingsRequested: settingsDialog.open()
    }

    menuBar: MenuBar {
        AppMenu {
            title: qsTr("&File")
            AppMenuItem { action: actions.newConversation }
            AppMenuItem { action: actions.openModel }
            AppMenuItem { action: actions.manageModels }
            MenuSeparator {}
            AppMenuItem { action: actions.exportMarkdown }
            AppMenuItem { action: actions.exportJson }
            MenuSeparator {}
            AppMenuItem { action: actions.quit }
        }
        AppMenu {
            title: qsTr("&Edit")
            AppMenuItem { action: actions.settings }
        }
        AppMenu {
            title: qsTr("&Chat")
            AppMenuItem { action: actions.stop }
            AppMenuItem { action: actions.regenerate }
        }
    }

    SplitView {
        anchors.fill: parent
        Sidebar {
            chat: window.chat
            SplitView.preferredWidth: 260
            SplitView.minimumWidth: 180
            SplitView.maximumWidth: 420
        }
        ChatPane {
            chat: window.chat
            inference: window.inference
            models: window.models ? window.models.installed : null
            settings: window.settings
            perf: window.perf
            apiServer: window.apiServer
            onApiServerSettingsRequested: settingsDialog.open()
            SplitView.fillWidth: true
            onOpenModelRequested: modelDialog.open()
            onManageModelsRequested: if (window.models) modelLibraryDialog.open()
        }
    }

    FileDialog {
        id: modelDialog
        title: qsTr("Choose a GGUF model")
        nameFilters: [qsTr("GGUF models (*.gguf)"), qsTr("All files (*)")]
        currentFolder: window.inference.modelsFolderUrl
        onAccepted: window.chat.loadModel(selectedFile)
    }

    ExportDialog {
        id: exportDialog
        chat: window.chat
    }

    SettingsDialog {
        id: settingsDialog
        parent: Overlay.overlay
        anchors.centerIn: parent
        settings: window.settings
        inference: window.inference
        chat: window.chat
        apiServer: window.apiServer
    }

    ModelDialog {
        id: modelLibraryDialog
        parent: Overlay.overlay
        anchors.centerIn: parent
        library: window.models
        chat: window.chat
        inference: window.inference
    }

    Component.onCompleted: {
        if (showSettings) settingsDialog.open()
        else if (askForModel && window.models) modelLibraryDialog.open()
        else if (askForModel) modelDialog.open()
    }
}
